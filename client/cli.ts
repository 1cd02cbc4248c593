// The `tollgate` command line: start, follow, inspect and decide on turns; run a worker or the dev server.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { Argument, Command, CommanderError, Option } from 'commander';
import { codecFromEnvironment } from '../codec/aes-gcm-codec';
import { codecTokenFromEnvironment, startCodecServer } from '../codec/codec-server';
import { generateApproverKeyPair } from '../common/approver-keys';
import type { PendingResolution } from '../common/contract/decisions';
import type { AgentTurnInput, TurnState } from '../common/contract/turn';
import type { TollgateConfig } from '../config/config-schema';
import { loadConfig, PROJECT_ROOT } from '../config/load-config';
import { openConfiguredStore } from '../activities/intents/open-store';
import type { IntentRecord } from '../activities/intents/intent-store';
import { ensureServer } from '../server/dev-server';
import { connectClient, probeServer } from '../connection/temporal-connection';
import { enclosingProject } from '../server/temporal-binaries';
import type { HistorySource } from './replay-histories';
import { runWorker } from '../worker/run-worker';
import { WORKFLOWS_PATH } from '../worker/create-worker';
import { decisionDigest, describeApproval, describeUsage, followTurn, SHOWN_ARGS_CHARS, toolCallTable } from './follow-turn';
import { forTerminal } from './terminal-text';
import { formatTable } from './format-table';
import { TollgateClient, TurnEndedError, type InboxEntry } from './tollgate-client';
import { deploymentStatus, DeploymentNotFoundError, promoteBuild, type DeploymentStatus } from './deployments';
import { deploymentNameOf } from '../worker/deployment';

/** A failure the CLI reports as one line, with its exit code. */
class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

const program = new Command('tollgate')
  .description('Run and inspect Tollgate agent turns on Temporal.')
  .option('--json', 'print machine-readable JSON instead of text')
  .showHelpAfterError()
  .exitOverride();

function json(): boolean {
  return Boolean(program.opts().json);
}

/** Prints JSON, or the text with every control and invisible character escaped (it may quote a turn's text anywhere). */
function print(value: unknown, text: () => string): void {
  console.log(json() ? JSON.stringify(value, null, 2) : forTerminal(text()));
}

async function connect(): Promise<{ config: TollgateConfig; client: TollgateClient }> {
  const config = loadConfig();
  const probe = await probeServer(config.temporal.address, config.temporalProfile);
  if (probe !== 'temporal') {
    throw new CliError(
      `no Temporal server answers at ${config.temporal.address}; start one with \`tollgate server start\` or set TEMPORAL_ADDRESS`,
      2,
    );
  }
  return { config, client: await TollgateClient.connect(config) };
}

async function withClient<T>(work: (client: TollgateClient, config: TollgateConfig) => Promise<T>): Promise<T> {
  const { config, client } = await connect();
  try {
    return await work(client, config);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError)
      throw new CliError(`no turn with workflow id ${error.workflowId} in namespace ${config.temporal.namespace}`);
    if (error instanceof TurnEndedError) throw new CliError(`rejected: ${error.message}`);
    if (error instanceof WorkflowUpdateFailedError) throw new CliError(`rejected: ${error.cause?.message ?? error.message}`);
    if (error instanceof WorkflowFailedError) {
      let cause: Error | undefined = error.cause;
      while (cause?.cause instanceof Error) cause = cause.cause;
      throw new CliError(`the turn failed: ${cause?.message ?? error.message}`);
    }
    throw error;
  } finally {
    await client.close();
  }
}

function turnInput(task: string, options: { taskId?: string; model?: string; tools?: string }): AgentTurnInput {
  return {
    taskId: options.taskId ?? `task-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}`,
    prompt: task,
    ...(options.model ? { model: options.model } : {}),
    ...(options.tools
      ? {
          tools: options.tools
            .split(',')
            .map((tool) => tool.trim())
            .filter(Boolean),
        }
      : {}),
  };
}

function describeState(workflowId: string, state: TurnState): string {
  const lines = [
    `${forTerminal(workflowId)}: ${state.status}, phase ${state.phase}, step ${state.step + 1}, ${state.toolCalls.length} tool call(s)`,
  ];
  if (state.usage) lines.push(`  ${describeUsage(state.usage, state.tokenBudget)}`);
  for (const pending of state.pendingApprovals) {
    lines.push(forTerminal(`  waiting for approval: ${pending.callId} ${pending.tool}`));
    lines.push(
      ...describeApproval(pending)
        .text.split('\n')
        .slice(1)
        .map((line) => `  ${line}`),
    );
  }
  for (const pending of state.pendingResolutions ?? []) {
    lines.push(forTerminal(`  waiting for a resolution: ${pending.callId} ${pending.tool}`));
    lines.push(
      ...describeResolution({ workflowId, ...pending })
        .split('\n')
        .slice(1)
        .map((line) => `  ${line}`),
    );
  }
  if (state.rejectedDecisionsDropped > 0) lines.push(`  ${state.rejectedDecisionsDropped} older rejected decision(s) not kept`);
  for (const rejected of state.rejectedDecisions) lines.push(forTerminal(`  rejected decision: ${rejected.why}`));
  return lines.join('\n');
}

const turnOptions = (command: Command) =>
  command
    .option('--task-id <id>', 'the business task the turn belongs to (idempotency keys derive from it)')
    .option('--model <name>', 'a model of the config (default: model.default)')
    .option('--tools <list>', 'comma-separated tools the turn may call (default: all)');

turnOptions(
  program
    .command('run')
    .description('start a turn and follow it live; the exit code is 0 only when it completes')
    .argument('<task>', 'what the agent should do'),
)
  .addOption(new Option('--approve', 'approve every call that waits for approval').conflicts('deny'))
  .option('--deny', 'deny every call that waits for approval')
  .action(async (task: string, options) => {
    const result = await withClient(async (client) => {
      const handle = await client.startTurn(turnInput(task, options));
      if (!json()) console.log(`Started ${handle.workflowId}.`);
      return json()
        ? client.result(handle.workflowId)
        : followTurn(client, handle.workflowId, { mode: options.approve ? 'approve' : options.deny ? 'deny' : 'ask' });
    });
    print(
      result,
      () =>
        `\n${result.status}, ${describeUsage(result.usage, result.tokenBudget)}${result.answer ? `\n\n${forTerminal(result.answer)}` : ''}` +
        `\n\n${toolCallTable(result.toolCalls)}`,
    );
    if (result.status !== 'completed') process.exitCode = 1;
  });

turnOptions(
  program.command('start').description('start a turn and print its workflow id').argument('<task>', 'what the agent should do'),
).action(async (task: string, options) => {
  const handle = await withClient((client) => client.startTurn(turnInput(task, options)));
  print(handle, () => handle.workflowId);
});

program
  .command('status')
  .description("a turn's status, phase, pending approvals and rejected decisions")
  .argument('<workflowId>')
  .action(async (workflowId: string) => {
    const state = await withClient((client) => client.state(workflowId));
    print(state, () => describeState(workflowId, state));
  });

program
  .command('follow')
  .description('follow a running turn live until it ends (approvals are left to `tollgate approve`)')
  .argument('<workflowId>')
  .action(async (workflowId: string) => {
    const result = await withClient((client) => (json() ? client.result(workflowId) : followTurn(client, workflowId, { mode: 'wait' })));
    print(
      result,
      () =>
        `\n${result.status}, ${describeUsage(result.usage, result.tokenBudget)}${result.answer ? `\n\n${forTerminal(result.answer)}` : ''}`,
    );
    if (result.status !== 'completed') process.exitCode = 1;
  });

/** The inbox as text: the calls waiting for approval, then the model steps waiting for a resume decision. */
function describeInbox(entries: InboxEntry[]): string {
  if (entries.length === 0) return 'Nothing waits for a person.';
  const calls = entries.filter((entry) => entry.kind === 'approval' || entry.kind === 'resolution');
  const resumes = entries.filter((entry) => entry.kind === 'resume');
  const lines: string[] = [];
  if (calls.length > 0) {
    lines.push(
      formatTable(
        ['workflow', 'task', 'call', 'tool', 'waits for', 'expires'],
        calls.map((entry) =>
          [entry.workflowId, entry.taskId, entry.callId, entry.tool, entry.kind, entry.expiresAt].map((cell) => forTerminal(cell)),
        ),
      ),
      ...calls.map((entry) =>
        entry.kind === 'approval'
          ? `\n${forTerminal(entry.workflowId)} ${describeApproval(entry).text}`
          : `\n${forTerminal(entry.workflowId)} ${describeResolution(entry)}`,
      ),
    );
  }
  if (resumes.length > 0) {
    if (lines.length > 0) lines.push('');
    lines.push(
      'Model streams cut off after chunks went out (`tollgate resume <workflow>` asks the model again, `--stop` stops the turn):',
      formatTable(
        ['workflow', 'task', 'step', 'chunks', 'stops at'],
        resumes.map((entry) =>
          [entry.workflowId, entry.taskId, String(entry.step + 1), String(entry.chunks), entry.expiresAt].map((cell) => forTerminal(cell)),
        ),
      ),
    );
  }
  return lines.join('\n');
}

program
  .command('inbox')
  .description(
    'everything waiting for a person, across all turns: calls waiting for approval, writes waiting for a resolution, model streams waiting for a resume decision',
  )
  .action(async () => {
    const entries = await withClient((client) => client.inbox());
    print(entries, () => describeInbox(entries));
  });

program
  .command('resume')
  .description('decide on a model stream cut off after chunks went out: ask the model again for that step, or stop the turn')
  .argument('<workflowId>')
  .option('--stop', 'stop the turn (model_failed, stream_interrupted) instead of asking the model again')
  .option('--by <name>', 'who decides, for the record (default: the login name)')
  .action(async (workflowId: string, options: { stop?: boolean; by?: string }) => {
    const receipt = await withClient(async (client) => {
      const pending = (await client.state(workflowId)).pendingResume;
      if (!pending) throw new CliError(`rejected: no model step of ${workflowId} waits for a resume decision`);
      if (!json())
        console.log(`Step ${pending.step + 1} broke after ${pending.chunks} chunks; it had streamed:\n${forTerminal(pending.partialText)}`);
      const by = options.by ?? process.env.USER;
      return client.resume(workflowId, { step: pending.step, decision: options.stop ? 'stop' : 'retry', ...(by ? { by } : {}) });
    });
    print(receipt, () =>
      receipt.decision === 'retry'
        ? `Step ${receipt.step + 1} of ${workflowId} is asked again.`
        : `Stopped ${workflowId} at step ${receipt.step + 1}.`,
    );
  });

/** A write waiting for a resolution, as the inbox shows it: why, its arguments, and the command that resolves it. */
function describeResolution(entry: PendingResolution & { workflowId: string }): string {
  return [
    `${forTerminal(entry.callId)} ${forTerminal(entry.tool)}: outcome unknown (${forTerminal(entry.reason)})`,
    ...forTerminal(JSON.stringify(entry.args, null, 2) ?? 'undefined')
      .split('\n')
      .map((line) => `  ${line}`),
    forTerminal(`  argsDigest ${entry.shownDigest ?? entry.argsDigest}`),
    `  tollgate resolve ${forTerminal(entry.workflowId)} ${forTerminal(entry.callId)} applied|not_applied [--note <text>]`,
  ].join('\n');
}

program
  .command('resolve')
  .description('say whether a write whose outcome is unknown took effect: applied settles it, not_applied lets it run again')
  .argument('<workflowId>')
  .argument('<callId>')
  .addArgument(new Argument('<outcome>', 'applied or not_applied').choices(['applied', 'not_applied']))
  .option('--note <text>', 'what you checked, for the record and the model')
  .option('--resolver <name>', "who resolves (default: the login name; with approvals.privateKeyEnv, the signing key's name)")
  .option('--args-digest <sha256>', 'the digest of the arguments you saw; without it, the call is shown and its digest is sent')
  .action(async (workflowId: string, callId: string, outcome: 'applied' | 'not_applied', options) => {
    const receipt = await withClient(async (client) => {
      let digest: string | undefined = options.argsDigest;
      if (!digest) {
        const pending = (await client.state(workflowId)).pendingResolutions?.find((entry) => entry.callId === callId);
        if (!pending) throw new CliError(`rejected: no call ${callId} of ${workflowId} waits for a resolution`);
        if (!json()) console.log(describeResolution({ workflowId, ...pending }));
        digest = pending.shownDigest ?? pending.argsDigest;
      }
      const resolver = options.resolver ?? (client.signingKeyId ? undefined : process.env.USER);
      return client.resolve(workflowId, callId, outcome, { resolver, note: options.note, argsDigest: digest });
    });
    print(receipt, () => `Resolved ${receipt.callId} of ${workflowId} as ${receipt.outcome}.`);
  });

/** The edited arguments of `approve --args`: JSON, or a clear error naming the option. */
function editedArguments(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CliError(`--args must be the edited arguments as JSON: ${(error as Error).message}`);
  }
}

for (const decision of ['approve', 'deny'] as const) {
  const command = program.command(decision);
  if (decision === 'approve') {
    command.option(
      '--args <json>',
      "run the call with these arguments instead (edited); checked like the model's call, with their own idempotency key",
    );
  }
  command
    .description(decision === 'approve' ? 'approve one call; it then runs exactly once' : 'deny one call; it never runs')
    .argument('<workflowId>')
    .argument('<callId>')
    .option('--reason <text>', 'why, for the record')
    .option('--approver <name>', "who decides (default: the login name; with approvals.privateKeyEnv, the signing key's name)")
    .option(
      '--args-digest <sha256>',
      'the digest of the arguments you saw; without it, the call is shown and the digest of what is shown is sent',
    )
    .option('--all', `show the whole arguments, however long (without it, at most ${SHOWN_ARGS_CHARS} characters are shown)`)
    .action(async (workflowId: string, callId: string, options) => {
      const args = editedArguments(options.args);
      const receipt = await withClient(async (client) => {
        let digest: string | undefined = options.argsDigest;
        if (!digest) {
          // Nothing is approved that was not shown: with --json nothing is, so the approver names the digest they checked.
          if (json() && decision === 'approve') {
            throw new CliError(`rejected: with --json no arguments are shown to approve from; pass --args-digest of what you checked`);
          }
          const pending = (await client.state(workflowId)).pendingApprovals.find((entry) => entry.callId === callId);
          if (!pending) throw new CliError(`rejected: no call ${callId} waits for approval`);
          const shown = describeApproval(pending, options.all ? { maxArgsChars: Number.POSITIVE_INFINITY } : {});
          if (!json()) console.log(shown.text);
          if (!shown.matches) throw new CliError(`rejected: the arguments of call ${callId} do not match their digest; nothing was sent`);
          if (!shown.complete && decision === 'approve') {
            throw new CliError(
              `rejected: the arguments of call ${callId} are longer than shown, and a call is approved only from a whole view; ` +
                'nothing was sent. See them whole with --all, or pass --args-digest of what you checked',
            );
          }
          digest = decisionDigest(pending);
        }
        // A signing client records its key's name as the approver; otherwise the login name stands in.
        const approver = options.approver ?? (client.signingKeyId ? undefined : process.env.USER);
        return client[decision](workflowId, callId, {
          reason: options.reason,
          approver,
          argsDigest: digest,
          ...(args !== undefined ? { args } : {}),
        });
      });
      const edited = receipt.editedDigest ? ` with edited arguments (argsDigest ${receipt.editedDigest})` : '';
      print(receipt, () => `${receipt.decision === 'approve' ? 'Approved' : 'Denied'} ${receipt.callId} of ${workflowId}${edited}.`);
    });
}

const keys = program.command('keys').description('approver keys that sign decisions (approvals.publicKeysEnv, approvals.privateKeyEnv)');

keys
  .command('generate')
  .description("print a new Ed25519 approver key pair as the worker's public entry and the operator's private entry")
  .argument('<name>', 'the key name, recorded as the approver of every decision it signs')
  .action((name: string) => {
    let pair: ReturnType<typeof generateApproverKeyPair>;
    try {
      pair = generateApproverKeyPair(name);
    } catch (error) {
      throw new CliError((error as Error).message);
    }
    print({ name, ...pair }, () =>
      [
        "# The worker's approvals.publicKeysEnv variable (public; several entries are separated by commas):",
        pair.publicEntry,
        "# The operator's approvals.privateKeyEnv variable (secret: keep it out of config files and shell history):",
        pair.privateEntry,
      ].join('\n'),
    );
  });

program
  .command('history')
  .description("a turn's tool calls as a table")
  .argument('<workflowId>')
  .action(async (workflowId: string) => {
    const state = await withClient((client) => client.state(workflowId));
    print(state.toolCalls, () => (state.toolCalls.length === 0 ? 'No tool calls yet.' : toolCallTable(state.toolCalls)));
  });

/** The intents of a task as the `intents` command prints them. */
function intentTable(intents: IntentRecord[]): string {
  const rows = intents.map((intent) =>
    [intent.key, intent.tool, intent.state, intent.callId, intent.startedAt, intent.committedAt ?? '-'].map(forTerminal),
  );
  return formatTable(['KEY', 'TOOL', 'STATE', 'CALL', 'STARTED', 'COMMITTED'], rows);
}

program
  .command('intents')
  .description("a task's write intents in the idempotency store: key, tool, state (started or committed), call and times")
  .argument('<taskId>', "the business task (the turn input's taskId)")
  .action(async (taskId: string) => {
    const store = openConfiguredStore(loadConfig());
    try {
      const intents = await store.listTask(taskId);
      const shown = intents.map(({ key, tool, state, callId, startedAt, committedAt }) => ({
        key,
        tool,
        state,
        callId,
        startedAt,
        ...(committedAt ? { committedAt } : {}),
      }));
      print(shown, () => (intents.length === 0 ? `No intents recorded for task ${forTerminal(taskId)}.` : intentTable(intents)));
    } finally {
      await store.close();
    }
  });

program
  .command('worker')
  .description('run a worker on the configured task queue until Ctrl-C')
  .action(async () => {
    await runWorker(loadConfig());
  });

program
  .command('codec-server')
  .description('serve /encode and /decode for the Web UI and CLI, with the keyring of encryption.keysEnv, until Ctrl-C')
  .option('--port <port>', 'the port (default: encryption.codecServer.port)')
  .action(async (options) => {
    const config = loadConfig();
    const codec = codecFromEnvironment(config.encryption.keysEnv);
    if (!codec) throw new CliError('encryption.keysEnv is not set in the config: there is nothing to decode');
    const { host, hosts, origins, tokenEnv } = config.encryption.codecServer;
    let token: string;
    try {
      token = codecTokenFromEnvironment(tokenEnv);
    } catch (error) {
      throw new CliError((error as Error).message);
    }
    const port = Number(options.port ?? config.encryption.codecServer.port);
    const codecServer = await startCodecServer({ codec, token, port, host, origins, hosts });
    console.log(`Codec server at ${codecServer.url} for ${origins.join(', ')}; callers send "Authorization: Bearer $${tokenEnv}".`);
    console.log('Ctrl-C stops it.');
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await codecServer.close();
  });

const server = program.command('server').description('the embedded Temporal dev server (Web UI included)');

function pidFile(config: TollgateConfig): string {
  return path.join(path.dirname(config.temporal.devServer.dbFile), 'dev-server.pid');
}

function recordedPid(config: TollgateConfig): number | undefined {
  const file = pidFile(config);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    rmSync(file, { force: true });
    return undefined;
  }
}

server
  .command('start')
  .description('start it in the background (or use the one already answering)')
  .action(async () => {
    const config = loadConfig();
    const lease = await ensureServer(config);
    if (!lease.started) {
      print({ address: lease.address, started: false }, () => `A Temporal server already answers at ${lease.address}; nothing started.`);
      return;
    }
    writeFileSync(pidFile(config), `${lease.started.process.pid}\n`);
    lease.started.process.unref();
    print(
      { address: lease.address, uiUrl: lease.uiUrl, pid: lease.started.process.pid, started: true },
      () => `Started the Temporal dev server at ${lease.address} (pid ${lease.started!.process.pid}); Web UI ${lease.uiUrl}`,
    );
  });

server
  .command('stop')
  .description('stop the dev server that `tollgate server start` started')
  .action(async () => {
    const config = loadConfig();
    const pid = recordedPid(config);
    if (pid === undefined) throw new CliError(`no dev server started by tollgate is running (no live pid in ${pidFile(config)})`);
    process.kill(pid, 'SIGTERM');
    for (let waited = 0; waited < 15_000; waited += 100) {
      if (recordedPid(config) === undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (recordedPid(config) !== undefined) process.kill(pid, 'SIGKILL');
    rmSync(pidFile(config), { force: true });
    print({ stopped: pid }, () => `Stopped the Temporal dev server (pid ${pid}).`);
  });

server
  .command('status')
  .description('whether a Temporal server answers at the configured address')
  .action(async () => {
    const config = loadConfig();
    const probe = await probeServer(config.temporal.address, config.temporalProfile);
    const pid = recordedPid(config);
    print({ address: config.temporal.address, answers: probe === 'temporal', pid }, () =>
      probe === 'temporal'
        ? `A Temporal server answers at ${config.temporal.address}${pid ? ` (dev server pid ${pid})` : ''}.`
        : `No Temporal server answers at ${config.temporal.address}.`,
    );
    if (probe !== 'temporal') process.exitCode = 1;
  });

program
  .command('setup')
  .description("install the pinned Temporal binaries (dev server, time-skipping test server) into this project's .tollgate/bin")
  .action(() => {
    const project = enclosingProject() ?? process.cwd();
    const folder = path.join(project, '.tollgate', 'bin');
    const args = [path.join(PROJECT_ROOT, 'scripts', 'setup.mjs'), '--binaries-only', '--into', folder, ...(json() ? ['--quiet'] : [])];
    const setup = spawnSync(process.execPath, args, { stdio: ['ignore', json() ? 'ignore' : 'inherit', 'inherit'] });
    if (setup.status !== 0) throw new CliError('setup failed; see the lines above');
    print({ folder }, () => `The Temporal binaries are in ${path.relative(process.cwd(), folder) || folder}.`);
  });

/** The replay code and the bundler it needs, loaded only by `tollgate replay` so that the other commands start fast. */
function replayCode(): typeof import('./replay-histories') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('./replay-histories');
}

/** The histories `tollgate replay` was given: files, or the workflows a visibility query finds on the configured server. */
async function replaySources(
  files: string[],
  query: string | undefined,
): Promise<{ sources: AsyncIterable<HistorySource> | HistorySource[]; close?: () => Promise<void> }> {
  const { historiesFromQuery, readHistoryFile } = replayCode();
  if (query === undefined) {
    try {
      return { sources: files.map((file) => readHistoryFile(file)) };
    } catch (error) {
      throw new CliError((error as Error).message);
    }
  }
  const config = loadConfig();
  if ((await probeServer(config.temporal.address, config.temporalProfile)) !== 'temporal') {
    throw new CliError(`no Temporal server answers at ${config.temporal.address}; set TEMPORAL_ADDRESS or temporal.address`, 2);
  }
  const connection = await connectClient(config);
  const client = new Client({ connection, namespace: config.temporal.namespace });
  return { sources: historiesFromQuery(client, query), close: () => connection.close() };
}

const deploy = program
  .command('deploy')
  .description("the builds of this worker's deployment (temporal.deployment): where each stands, what still runs on it, promotion");

/** The deployment the commands speak of: --deployment, else the config's (its name, else the task queue's). */
function deploymentOption(config: TollgateConfig, given?: string): string {
  return given ?? deploymentNameOf(config);
}

function describeBuilds(status: DeploymentStatus): string {
  if (status.builds.length === 0) return `Deployment ${status.deploymentName} has no builds yet.`;
  const rows = status.builds.map((build) => [
    build.buildId,
    build.state + (build.rampPercent !== undefined ? ` ${build.rampPercent}%` : ''),
    String(build.openTurns),
    String(build.openConversations),
    String(build.waitingForPerson),
    build.oldestWait ? `${build.oldestWait.since} (${build.oldestWait.kind}, ${build.oldestWait.workflowId})` : '-',
    build.safeToStop ? 'yes' : 'no',
  ]);
  return [
    `Deployment ${status.deploymentName}:`,
    formatTable(['BUILD', 'STATE', 'TURNS', 'CONVERSATIONS', 'WAITING FOR A PERSON', 'OLDEST WAIT', 'SAFE TO STOP'], rows),
  ].join('\n');
}

deploy
  .command('status')
  .description(
    'each build: current, ramping, draining, drained or inactive; its open turns, those waiting for a person and the oldest wait',
  )
  .option('--deployment <name>', "another deployment than the config's")
  .action(async (options: { deployment?: string }) => {
    const status = await withClient((client, config) =>
      deploymentStatus(client.client, deploymentOption(config, options.deployment)),
    ).catch((error: Error) => {
      throw error instanceof DeploymentNotFoundError ? new CliError(error.message) : error;
    });
    print(status, () => describeBuilds(status));
  });

deploy
  .command('promote')
  .description('make a build current (new turns start on it; running turns stay on their builds), or ramp it to a share of new turns')
  .argument('<build>', 'the build id (`tollgate deploy status` lists them)')
  .option('--ramp <percent>', 'let the build take this share of new turns (0-100) beside the current one')
  .option('--deployment <name>', "another deployment than the config's")
  .action(async (buildId: string, options: { ramp?: string; deployment?: string }) => {
    const rampPercent = options.ramp === undefined ? undefined : Number(options.ramp);
    if (
      rampPercent !== undefined &&
      !(options.ramp!.trim() !== '' && Number.isFinite(rampPercent) && rampPercent >= 0 && rampPercent <= 100)
    )
      throw new CliError(`--ramp: "${options.ramp}" is not a percentage from 0 to 100`);
    const promotion = await withClient((client, config) =>
      promoteBuild(client.client, { deploymentName: deploymentOption(config, options.deployment), buildId, rampPercent }),
    ).catch((error: Error & { code?: number }) => {
      throw error.code !== undefined ? new CliError(`the server refused: ${error.message}`) : error;
    });
    print(promotion, () =>
      [
        rampPercent === undefined
          ? `Build ${promotion.buildId} of ${promotion.deploymentName} is current${promotion.previous ? ` (was ${promotion.previous}, which keeps its running turns)` : ''}.`
          : `Build ${promotion.buildId} of ${promotion.deploymentName} takes ${rampPercent}% of new turns.`,
        `The same with Temporal's CLI: ${promotion.temporalCommand}`,
      ].join('\n'),
    );
  });

program
  .command('replay')
  .description(
    'replay histories on the current workflow code and report each one that would break; the check to run before deploying a worker',
  )
  .argument('[files...]', 'exported histories (`temporal workflow show --output json`)')
  .option(
    '--query <visibility query>',
    'replay the workflows this query finds on the configured server, e.g. "TollgateAwaitingApproval = true"',
  )
  .option('--workflows <path>', "the workflow code to replay on: a folder with index.ts, or a file (default: this Tollgate's workflows)")
  .action(async (files: string[], options: { query?: string; workflows?: string }) => {
    if (files.length > 0 === (options.query !== undefined)) throw new CliError('give history files or --query, not both and not neither');
    const { replayHistories, workflowsEntry } = replayCode();
    let workflowsPath = WORKFLOWS_PATH;
    try {
      if (options.workflows) workflowsPath = workflowsEntry(options.workflows);
    } catch (error) {
      throw new CliError((error as Error).message);
    }
    const { sources, close } = await replaySources(files, options.query);
    let outcomes;
    try {
      outcomes = await replayHistories(workflowsPath, sources);
    } finally {
      await close?.();
    }
    const breaking = outcomes.filter((outcome) => outcome.verdict !== 'replays');
    print(outcomes, () =>
      [
        ...outcomes.map((outcome) =>
          forTerminal(
            outcome.verdict === 'replays'
              ? `replays  ${outcome.source}`
              : `${outcome.verdict === 'breaks' ? 'BREAKS' : 'ERROR '}   ${outcome.source} (${outcome.workflowId}): ${outcome.message}`,
          ),
        ),
        outcomes.length === 0
          ? 'No history to replay.'
          : `${outcomes.length} history(ies) replayed: ${outcomes.length - breaking.length} replay, ${breaking.length} would break.`,
      ].join('\n'),
    );
    if (breaking.length > 0) process.exitCode = 1;
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof CommanderError) {
    process.exit(error.exitCode);
  }
  const exitCode = error instanceof CliError ? error.exitCode : 1;
  console.error(forTerminal(`tollgate: ${error instanceof Error ? error.message : String(error)}`));
  process.exit(exitCode);
});
