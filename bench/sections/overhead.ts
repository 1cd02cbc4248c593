// Item 1: what one tool call costs through the boundary over the same handler as a bare activity,
// for each effect level. Variants alternate round by round so a noisy machine moves both alike.
// Durations are workflow time from the call's start to its outcome (server timestamps).
import type { ScriptStep } from '../../common/contract/turn';
import type { BenchContext } from '../context';
import { median, percentile, ratio, table, type SectionResult } from '../lib';

const ROUNDS = Number(process.env.BENCH_OVERHEAD_ROUNDS ?? 5);
const CALLS = 20;

type Kind = 'read' | 'reversible_write' | 'irreversible_write';

const TARGETS: Record<Kind, string> = { read: '≤ ×1.10', reversible_write: '≤ ×1.5', irreversible_write: '–' };

function script(kind: Kind, round: number): ScriptStep[] {
  const call = (index: number) => {
    if (kind === 'read') return { tool: 'lookup', args: { query: `query ${index}` } };
    if (kind === 'reversible_write') return { tool: 'put_note', args: { key: `overhead-${round}-${index}`, text: `note ${index}` } };
    return { tool: 'send_note', args: { to: 'requester', text: `note ${round}-${index}` } };
  };
  return [...Array.from({ length: CALLS }, (_, index) => ({ toolCalls: [call(index)] })), { text: 'done' }];
}

async function tollgateSamples(context: BenchContext, kind: Kind, round: number): Promise<number[]> {
  const result = await context.runTurn(`overhead-${kind}-${round}`, script(kind, round), { approveAtOnce: kind === 'irreversible_write' });
  const failed = result.toolCalls.filter((event) => event.status !== 'success');
  if (result.status !== 'completed' || failed.length > 0)
    throw new Error(`overhead turn ${kind} ended ${result.status} with ${failed.length} failed calls`);
  return result.toolCalls.map((event) => event.durationMs);
}

async function bareSamples(context: BenchContext, kind: Kind, round: number): Promise<number[]> {
  const workflowId = `overhead-bare-${kind}-${round}`;
  if (kind !== 'irreversible_write')
    return context.runBare<number[]>('bareCalls', workflowId, [kind === 'read' ? 'read' : 'write', CALLS, workflowId]);
  const handle = await context.client.workflow.start('bareApprovedSends', { taskQueue: context.taskQueue, workflowId, args: [CALLS] });
  const result = handle.result() as Promise<number[]>;
  const approving = (async () => {
    let finished = false;
    void result.finally(() => {
      finished = true;
    });
    let last = -1;
    while (!finished) {
      const waiting = await handle.query<number>('bareWaiting').catch(() => -1);
      if (waiting > last) {
        last = waiting;
        await handle.signal('bareApprove', waiting);
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  const [durations] = await Promise.all([result, approving]);
  return durations;
}

export async function overheadSection(context: BenchContext): Promise<SectionResult> {
  const kinds: Kind[] = ['read', 'reversible_write', 'irreversible_write'];
  const samples = Object.fromEntries(kinds.map((kind) => [kind, { bare: [] as number[], tollgate: [] as number[] }])) as Record<
    Kind,
    { bare: number[]; tollgate: number[] }
  >;
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of kinds) {
      // Which variant goes first alternates too.
      const order = round % 2 === 0 ? (['bare', 'tollgate'] as const) : (['tollgate', 'bare'] as const);
      for (const variant of order) {
        const values = variant === 'bare' ? await bareSamples(context, kind, round) : await tollgateSamples(context, kind, round);
        samples[kind][variant].push(...values);
      }
    }
  }
  const rows = kinds.map((kind) => {
    const { bare, tollgate } = samples[kind];
    return {
      kind,
      calls: tollgate.length,
      bare: { median: median(bare), p95: percentile(bare, 0.95) },
      tollgate: { median: median(tollgate), p95: percentile(tollgate, 0.95) },
      target: TARGETS[kind],
    };
  });
  const markdown = table(
    ['call', 'calls each', 'bare median ms', 'bare p95 ms', 'Tollgate median ms', 'Tollgate p95 ms', 'ratio median', 'ratio p95', 'target'],
    rows.map((row) => [
      row.kind,
      row.calls,
      row.bare.median,
      row.bare.p95,
      row.tollgate.median,
      row.tollgate.p95,
      ratio(row.tollgate.median, row.bare.median),
      ratio(row.tollgate.p95, row.bare.p95),
      row.target,
    ]),
  );
  return {
    name: 'per-call-overhead',
    title: 'Per-call latency: Tollgate vs the same handler as a bare activity',
    markdown: `${markdown}\n\nWorkflow time from the call's start to its outcome; ${ROUNDS} rounds × ${CALLS} calls per variant, alternating. Bare irreversible = wait for a signal, then the activity; both approvers poll every 5 ms and signal at once.`,
    data: { rounds: ROUNDS, callsPerRound: CALLS, rows, samples },
  };
}
