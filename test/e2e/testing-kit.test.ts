import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '../../config/load-config';
import { defineTool } from '../../tools/define-tool';
import { createTestEnvironment, script, ScriptNotFollowedError, type TestEnvironment } from '../../testing';

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text.',
  input: z.strictObject({ text: z.string() }),
  effect: 'read',
  handler: ({ text }) => ({ echoed: text }),
});

let kit: TestEnvironment;
beforeAll(async () => {
  kit = await createTestEnvironment({ tools: [echo] });
});
afterAll(() => kit?.teardown());

describe('the testing kit', () => {
  it('plays provider faults over HTTP: a 5xx and a 429 retried, a stream cut after 2 chunks, malformed tool-call JSON refused', async () => {
    const before = kit.executions('echo');
    const turn = await kit.startTurn('faults', [
      script.serverError({ status: 502 }),
      script.rateLimited({ retryAfter: '10s' }),
      script.toolCall('echo', { text: 'one' }),
      script.cutAfter(2),
      script.malformedToolCall('echo'),
      script.text('Done.'),
    ]);
    // The cut stream waits for a person (model.onInterruptedStream: ask); the test gives the decision one would give.
    const waiting = await kit.pendingResume(turn);
    expect(waiting).toMatchObject({ step: 1, chunks: 2 });
    expect(await kit.resume(turn, 'retry')).toMatchObject({ step: 1, decision: 'retry', accepted: true });
    const result = await turn.result();
    expect(result).toMatchObject({ status: 'completed', answer: 'Done.' });
    expect(result.modelInterruptions).toEqual([
      expect.objectContaining({ message: expect.stringContaining('after 2 chunks'), decision: 'retry' }),
    ]);
    expect(result.toolCalls.map((event) => [event.tool, event.status, event.code ?? null, event.executions])).toEqual([
      ['echo', 'success', null, 1],
      ['echo', 'error', 'invalid_arguments', 0],
    ]);
    expect(kit.executions('echo') - before).toBe(1);
    const report = await turn.report();
    expect(report.followed).toBe(true);
    expect(report.steps.map((step) => step.did)).toEqual([
      'answered',
      'answered',
      'ran: success, 1 execution',
      'answered',
      'refused (invalid_arguments), as scripted',
      'answered',
    ]);
  });

  it('fails a turn that leaves its script with a table of the script against what the turn did', async () => {
    const failure = await kit
      .run('wander', [
        script.toolCall('echo', { text: 'a' }),
        script.toolCall('no_such_tool', {}),
        script.text('Done.'),
        script.text('More.'),
      ])
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ScriptNotFollowedError);
    const { message, report } = failure as ScriptNotFollowedError;
    expect(report.steps.map((step) => step.followed)).toEqual([true, false, true, false]);
    expect(message).toMatch(/did not follow its script \(status completed\):/);
    expect(message).toMatch(/^ {2}1\. call echo \{"text":"a"\}\s+ran: success, 1 execution$/m);
    expect(message).toMatch(/^✗ 2\. call no_such_tool \{\}\s+refused \(unknown_tool\)$/m);
    expect(message).toMatch(/^✗ 4\. text "More\."\s+never reached \(the turn ended: completed\)$/m);
  });

  it('names what is wrong: an unknown tool to count, a bad config key, a bad mode, skip outside time-skipping', async () => {
    expect(() => kit.executions('nope')).toThrow('executions: no tool nope in this environment (echo)');
    await expect(createTestEnvironment({ tools: [echo], config: { retry: { initialIntervl: '1s' } } })).rejects.toThrow(ConfigError);
    await expect(createTestEnvironment({ tools: [echo], config: { retry: { initialIntervl: '1s' } } })).rejects.toThrow(
      /createTestEnvironment\(\{ config \}\): unknown key "retry.initialIntervl"/,
    );
    await expect(createTestEnvironment({ tools: [echo], mode: 'fast' as never })).rejects.toThrow(
      `createTestEnvironment: mode must be 'time-skipping' or 'dev-server', got "fast"`,
    );
    expect(() => script.cutAfter(0)).toThrow('script.cutAfter: chunks must be a whole number of at least 1, got 0');
  });

  it('runs on the dev server too, where skip refuses; a second teardown is harmless', async () => {
    const live = await createTestEnvironment({ tools: [echo], mode: 'dev-server' });
    try {
      const result = await live.run('live', [script.toolCall('echo', { text: 'x' }), script.text('Live.')]);
      expect(result).toMatchObject({ status: 'completed', answer: 'Live.' });
      expect(live.executions('echo')).toBe(1);
      await expect(live.skip('1h')).rejects.toThrow("skip: the server's clock can only be moved in mode 'time-skipping'");
    } finally {
      await live.teardown();
      await live.teardown();
    }
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  for (let waited = 0; waited < timeoutMs && !condition(); waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
}

/**
 * Runs the fixture that starts an environment and never tears it down; once it printed its server's
 * pid, it exits by itself (`exit`) or is sent SIGTERM (`signal`). Returns the pids and whether each
 * is still alive 5 s later; the fixture itself is killed at the end either way.
 */
async function abandon(mode: string, how: 'exit' | 'signal'): Promise<{ servers: number[]; stillAlive: number[] }> {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '..', 'fixtures', 'kit-abandoned.ts'), mode, how], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  try {
    const servers = await new Promise<number[]>((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        output += chunk;
        const line = /\{"servers":.*\}/.exec(output);
        if (line) resolve(JSON.parse(line[0]).servers);
      });
      child.once('exit', (code) => reject(new Error(`the fixture exited (${code}) before it printed its servers: ${output}`)));
    });
    if (how === 'signal') child.kill('SIGTERM');
    await until(() => !servers.some(alive), 5_000);
    return { servers, stillAlive: servers.filter(alive) };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

describe('cleaning up after a test process that never tore down', () => {
  it.each([
    ['time-skipping', 'exit'],
    ['dev-server', 'signal'],
  ] as const)(
    'kills the %s server when the process ends by %s',
    async (mode, how) => {
      const { servers, stillAlive } = await abandon(mode, how);
      expect(servers.length).toBe(1);
      expect(stillAlive).toEqual([]);
      // The fixture bundles the workflows in its own process before it starts the server.
    },
    300_000,
  );
});
