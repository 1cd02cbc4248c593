import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, NativeConnection, Runtime, type LogEntry, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelStep } from '../../activities/models/model-step';
import type { StreamProgress } from '../../common/activity-types';
import { createConfiguredModels } from '../../activities/models/language-model';
import { TollgateClient } from '../../client/tollgate-client';
import { decisionDigest, describeApproval } from '../../client/follow-turn';
import type { ModelStepInput, ModelStepResult } from '../../common/activity-types';
import type { PendingApproval } from '../../common/contract/decisions';
import type { ScriptStep, TurnState } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { loadConfig, PROJECT_ROOT } from '../../config/load-config';
import { freePort } from '../../connection/ports';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { defineTool } from '../../tools/define-tool';
import { argsDigest } from '../../tools/canonical-json';
import { createToolRegistry } from '../../tools/tool-registry';
import { createWorker } from '../../worker/create-worker';
import { renderDetails } from '../../workflows/decisions/details';
import { startingState } from '../../workflows/turn/turn-run';
import { bundleWorkflows } from '../helpers/servers';
import { temporalCli } from '../helpers/temporal-cli';

// A value only the config's pattern knows, and one of the built-in secret shapes.
const ACCOUNT = 'acct-12345678';
const API_KEY = 'sk-live4f9Qz7Xc2Lm8Np3Rt6Vw';
const SECRETS = [ACCOUNT, API_KEY];

const logs: LogEntry[] = [];
const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-redaction-'));
const configFile = path.join(folder, 'tollgate.yaml');
let server: DevServer;
let config: TollgateConfig;
let workflowBundle: WorkflowBundleWithSourceMap;

/** What the transfer handler was called with: the real arguments must reach it. */
const transfers: unknown[] = [];

const tools = [
  defineTool({
    name: 'check_account',
    description: 'Checks an account.',
    input: z.strictObject({ account: z.string().describe('The account.') }),
    effect: 'read',
    maxAttempts: 1,
    handler: ({ account }) => {
      throw new Error(`account ${account} is locked (key ${API_KEY})`);
    },
  }),
  defineTool({
    name: 'transfer',
    description: 'Moves money out of an account.',
    input: z.strictObject({ account: z.string().describe('The account.'), memo: z.string().describe('A note.') }),
    effect: 'irreversible_write',
    summary: ({ account, memo }) => `${account} ${memo}`,
    handler: (args) => {
      transfers.push(args);
      return { moved: true, from: args.account, token: API_KEY };
    },
  }),
];

const script: ScriptStep[] = [
  { text: `Checking ${ACCOUNT} with ${API_KEY}.`, toolCalls: [{ tool: 'check_account', args: { account: ACCOUNT } }] },
  {
    text: `Moving the balance of ${ACCOUNT}.`,
    toolCalls: [{ tool: 'transfer', args: { account: ACCOUNT, memo: `authorized by ${API_KEY}` } }],
  },
  { text: `Done: ${ACCOUNT} is empty.` },
];

beforeAll(async () => {
  // This file's own runtime logger: every line the worker logs is kept and searched.
  Runtime.install({ logger: new DefaultLogger('DEBUG', (entry) => logs.push(entry)) });
  const port = await freePort();
  [server, workflowBundle] = await Promise.all([
    startDevServer({
      address: `127.0.0.1:${port}`,
      namespace: 'default',
      dbFile: path.join(folder, 'temporal.db'),
      logFile: path.join(folder, 'server.log'),
    }),
    bundleWorkflows(),
  ]);
  writeFileSync(
    configFile,
    [
      'temporal:',
      `  address: ${server.address}`,
      '  taskQueue: tollgate-redaction-test',
      `workspace: ${path.join(folder, 'workspace')}`,
      `corpus: ${path.join(PROJECT_ROOT, 'examples', 'corpus')}`,
      'store:',
      `  sqliteFile: ${path.join(folder, 'idempotency.db')}`,
      'redact:',
      "  patterns: ['acct-\\d{8}']",
      '',
    ].join('\n'),
  );
  config = loadConfig({ file: configFile, env: {} });
});

afterAll(async () => {
  await server?.stop();
});

/** Runs the `tollgate` binary against this file's server; returns its output. */
async function tollgate(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs'), ...args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, TOLLGATE_CONFIG: configFile, TEMPORAL_ADDRESS: '' },
  });
  return stdout;
}

/** Which secrets a text holds. */
function found(text: string): string[] {
  return SECRETS.filter((secret) => text.includes(secret));
}

type HistoryEvent = Record<string, unknown> & { eventId: string; eventType: string };
type JsonPayload = { metadata?: Record<string, string>; data?: string };

function decodePayload(payload: JsonPayload): unknown {
  const text = Buffer.from(payload.data ?? '', 'base64').toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The history with every payload decoded in place, so a search sees what the payloads hold. */
function decoded(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decoded);
  if (!value || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  if (record.metadata && typeof record.metadata === 'object' && 'encoding' in record.metadata) return decodePayload(record as JsonPayload);
  return Object.fromEntries(Object.entries(record).map(([key, item]) => [key, decoded(item)]));
}

/**
 * The places where the design keeps the real values (docs/security.md, Redaction), removed from a
 * decoded history: the prompt in the workflow's input; the model step's input (the prompt, and the
 * arguments of the calls the model asked for); the arguments in the model step's result; the
 * arguments in `runTool`'s input. The scripted model's script travels in the workflow's and the
 * model step's input too: it stands for what a provider would stream, which no history holds.
 * Everything else must be free of secrets.
 */
function withoutRealValues(events: HistoryEvent[]): HistoryEvent[] {
  const activityOf = new Map<string, string>();
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes as { activityType?: { name?: string } } | undefined;
    if (scheduled) activityOf.set(event.eventId, scheduled.activityType?.name ?? '');
  }
  return events.map((event) => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a decoded history event: walked by field names known to hold the values
    const copy = structuredClone(event) as Record<string, any>;
    const started = copy.workflowExecutionStartedEventAttributes;
    if (started) {
      delete started.input.payloads[0].prompt;
      delete started.input.payloads[0].model.script;
    }
    const scheduled = copy.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'modelStep') {
      delete scheduled.input.payloads[0].model.script;
      for (const message of scheduled.input.payloads[0].messages) {
        if (message.role === 'user') delete message.content;
        for (const call of message.toolCalls ?? []) delete call.args;
      }
    }
    if (scheduled?.activityType?.name === 'runTool') delete scheduled.input.payloads[0].args;
    const completed = copy.activityTaskCompletedEventAttributes;
    if (completed && activityOf.get(String(completed.scheduledEventId)) === 'modelStep') {
      for (const call of (completed.result.payloads[0] as ModelStepResult).toolCalls) delete (call as { args?: unknown }).args;
    }
    return copy as HistoryEvent;
  });
}

describe('redaction', () => {
  it('keeps the secrets of a prompt, tool arguments, tool output and model text out of everything shown or stored', async () => {
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createWorker({ config, connection, tools, workflowBundle });
    const client = await TollgateClient.connect(config);
    const prompt = `Empty ${ACCOUNT}; the key is ${API_KEY}.`;
    const model = { provider: 'scripted' as const, script };

    const seen = await worker.runUntil(async () => {
      const { workflowId } = await client.startTurn({ taskId: 'redaction', prompt, model, tools: tools.map((tool) => tool.name) });
      const handle = client.client.workflow.getHandle(workflowId);
      let state: TurnState | undefined;
      for (let tries = 0; tries < 200 && !state?.pendingApprovals.length; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        state = await client.state(workflowId);
      }
      const pending = state!.pendingApprovals[0];
      expect(pending).toBeDefined();
      const { currentDetails } = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
      const status = await tollgate(['status', workflowId]);
      const statusJson = await tollgate(['--json', 'status', workflowId]);
      const inbox = await tollgate(['inbox']);
      const inboxJson = await tollgate(['--json', 'inbox']);
      // The CLI's approve sends the digest of what it showed: the redacted copy's, which the workflow takes.
      const approved = await tollgate(['approve', workflowId, pending.callId]);
      const result = await client.result(workflowId);
      const history = await temporalCli<{ events: HistoryEvent[] }>(server.address, ['workflow', 'show', '--workflow-id', workflowId]);
      return { workflowId, state: state!, pending, currentDetails, status, statusJson, inbox, inboxJson, approved, result, history };
    });
    await client.close();
    await connection.close();

    // The call ran once, with the real arguments; the approval bound it to them.
    expect(seen.approved).toContain(`Approved ${seen.pending.callId}`);
    expect(transfers).toEqual([{ account: ACCOUNT, memo: `authorized by ${API_KEY}` }]);
    expect(seen.result.toolCalls.map((event) => [event.tool, event.status])).toEqual([
      ['check_account', 'error'],
      ['transfer', 'success'],
    ]);
    expect(seen.result.status).toBe('completed');

    // What waited was shown redacted, with its own digest, and the arguments are in the Web UI's details.
    expect(seen.pending.args).toEqual({ account: '[redacted]', memo: 'authorized by [redacted]' });
    expect(seen.pending.redactedValues).toBe(2);
    expect(seen.pending.shownDigest).toBe(argsDigest(seen.pending.args));
    expect(seen.pending.argsDigest).toBe(argsDigest({ account: ACCOUNT, memo: `authorized by ${API_KEY}` }));
    expect(seen.currentDetails).toContain('"account": "[redacted]"');
    expect(seen.currentDetails).toContain(`argsDigest \`${seen.pending.shownDigest}\``);
    expect(seen.status).toContain('2 values redacted');
    expect(seen.status).toContain(`argsDigest ${seen.pending.shownDigest}`);

    const shown = {
      state: JSON.stringify(seen.state),
      currentDetails: seen.currentDetails,
      status: seen.status,
      statusJson: seen.statusJson,
      inbox: seen.inbox,
      inboxJson: seen.inboxJson,
      approve: seen.approved,
      result: JSON.stringify(seen.result),
      log: JSON.stringify(logs.map(({ message, meta }) => ({ message, meta }))),
    };
    // The log has the handler's failure (with its stack), so its search is not empty-handed.
    expect(shown.log).toContain('tool handler threw');
    for (const [where, text] of Object.entries(shown)) expect({ where, secrets: found(text) }).toEqual({ where, secrets: [] });

    // The history: secrets only where the real values must be, and they are there (the search looks at decoded payloads).
    const events = decoded(seen.history.events) as HistoryEvent[];
    expect(found(JSON.stringify(events))).toEqual(SECRETS);
    const rest = withoutRealValues(events);
    for (const event of rest)
      expect({ event: `${event.eventId} ${event.eventType}`, secrets: found(JSON.stringify(event)) }).toEqual({
        event: `${event.eventId} ${event.eventType}`,
        secrets: [],
      });
    // Summaries (user metadata of the activities and the approval timer) are among what was searched.
    const summaries = JSON.stringify(rest.map((event) => event.userMetadata).filter(Boolean));
    expect(summaries).toContain('transfer [redacted] authorized by [redacted]');
  });

  it('redacts the live model text in the heartbeat details, the step text and refusal messages', async () => {
    const registry = createToolRegistry({ tools });
    const modelStep = createModelStep({ registry, config, models: createConfiguredModels(config) });
    const environment = new MockActivityEnvironment();
    const beats: StreamProgress[] = [];
    environment.on('heartbeat', (details: StreamProgress) => beats.push(details));
    const refused = { tool: 'transfer', args: { account: ACCOUNT, memo: 7 } };
    const model = { provider: 'scripted' as const, script: [{ text: `Checking ${ACCOUNT} with ${API_KEY}.`, toolCalls: [refused] }] };
    const input: ModelStepInput = { taskId: 'live', step: 0, model, messages: [{ role: 'user', content: 'go' }] };
    const result = (await environment.run(modelStep, input)) as ModelStepResult;
    expect(beats.length).toBeGreaterThan(0);
    expect(beats.at(-1)!.text).toBe('Checking [redacted] with [redacted].');
    expect(found(JSON.stringify(beats))).toEqual([]);
    expect(result.text).toBe('Checking [redacted] with [redacted].');
    // A refused call keeps its real arguments (the model asked for them) and shows a redacted copy.
    const [call] = result.toolCalls;
    expect(call.refusal?.code).toBe('invalid_arguments');
    expect(call.args).toEqual(refused.args);
    expect(call.shownArgs).toEqual({ account: '[redacted]', memo: 7 });
  });

  it('shows a redacted waiting call with the digest of what is shown, and refuses a view whose arguments were changed', () => {
    const shownArgs = { account: '[redacted]', memo: 'x' };
    const pending: PendingApproval = {
      callId: 'call-1-0',
      tool: 'transfer',
      args: shownArgs,
      argsDigest: argsDigest({ account: ACCOUNT, memo: 'x' }),
      redactedValues: 1,
      shownDigest: argsDigest(shownArgs),
      round: 1,
      requestedAt: '2026-01-01T00:00:00.000Z',
      expiresAt: '2026-01-02T00:00:00.000Z',
    };
    expect(decisionDigest(pending)).toBe(pending.shownDigest);
    const view = describeApproval(pending);
    expect(view.matches).toBe(true);
    expect(view.text).toContain('1 value redacted');
    expect(view.text).toContain(`argsDigest ${pending.shownDigest}`);
    // Arguments shown that are not those the worker's digest covers cannot be approved from the view.
    expect(describeApproval({ ...pending, args: { account: '[redacted]', memo: 'y' } }).matches).toBe(false);
    // Without redaction, the real digest is named, as before.
    const plain: PendingApproval = {
      ...pending,
      args: { memo: 'x' },
      argsDigest: argsDigest({ memo: 'x' }),
      redactedValues: undefined,
      shownDigest: undefined,
    };
    expect(decisionDigest(plain)).toBe(plain.argsDigest);
    expect(describeApproval(plain).matches).toBe(true);
    // The Web UI's details: the arguments, bounded.
    const long: PendingApproval = { ...pending, args: { memo: 'z'.repeat(5_000) } };
    const details = renderDetails({ ...startingState('t'), phase: 'awaiting_approval', pendingApprovals: [long] });
    expect(details).toContain('more characters');
    expect(details.length).toBeLessThan(3_000);
  });
});
