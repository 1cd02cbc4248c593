// Item 2: turns per second with the scripted model (3 reads, then 1 reversible write) against bare
// workflows running the same activities, at 1, 10 and 100 turns in flight. Each level alternates
// the variants round by round.
import type { ScriptStep } from '../../common/contract/turn';
import type { BenchContext } from '../context';
import { inLanes, median, ratio, table, type SectionResult } from '../lib';

const LEVELS = [
  { concurrency: 1, turns: 10 },
  { concurrency: 10, turns: 50 },
  { concurrency: 100, turns: 200 },
];
const ROUNDS = Number(process.env.BENCH_THROUGHPUT_ROUNDS ?? 2);

export type Variant = 'bare_4_activities' | 'bare_agent_loop' | 'tollgate';
const VARIANTS: Variant[] = ['bare_4_activities', 'bare_agent_loop', 'tollgate'];

function turnScript(id: string): ScriptStep[] {
  return [
    { toolCalls: [0, 1, 2].map((index) => ({ tool: 'lookup', args: { query: `${id} ${index}` } })) },
    { toolCalls: [{ tool: 'put_note', args: { key: id, text: `note of ${id}` } }] },
    { text: 'done' },
  ];
}

export async function runOne(context: BenchContext, variant: Variant, id: string): Promise<void> {
  if (variant === 'tollgate') {
    const result = await context.runTurn(id, turnScript(id));
    if (result.status !== 'completed' || result.toolCalls.some((event) => event.status !== 'success'))
      throw new Error(`throughput turn ${id} ended ${result.status}`);
    return;
  }
  await context.runBare(variant === 'bare_4_activities' ? 'bareTurn' : 'bareAgentLoop', id, [id]);
}

export async function throughputSection(context: BenchContext): Promise<SectionResult> {
  const rows = [];
  for (const { concurrency, turns } of LEVELS) {
    const rates: Record<Variant, number[]> = { bare_4_activities: [], bare_agent_loop: [], tollgate: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
      for (const variant of order) {
        const wallMs = await inLanes(turns, concurrency, (index) =>
          runOne(context, variant, `tp-${variant}-${concurrency}-${round}-${index}`),
        );
        rates[variant].push((turns * 1000) / wallMs);
      }
    }
    const rate = Object.fromEntries(VARIANTS.map((variant) => [variant, median(rates[variant])])) as Record<Variant, number>;
    rows.push({ concurrency, turns, rounds: ROUNDS, rates, rate });
  }
  const markdown = table(
    [
      'turns in flight',
      'turns per run',
      'bare 4 activities turns/s',
      'bare agent loop turns/s',
      'Tollgate turns/s',
      'Tollgate vs bare 4',
      'Tollgate vs bare loop',
    ],
    rows.map((row) => [
      row.concurrency,
      row.turns,
      row.rate.bare_4_activities.toFixed(1),
      row.rate.bare_agent_loop.toFixed(1),
      row.rate.tollgate.toFixed(1),
      ratio(row.rate.tollgate, row.rate.bare_4_activities),
      ratio(row.rate.tollgate, row.rate.bare_agent_loop),
    ]),
  );
  return {
    name: 'throughput',
    title: 'Throughput: turns per second (3 reads + 1 reversible write each)',
    markdown: `${markdown}\n\nMedian of ${ROUNDS} runs per variant, alternating. "bare 4 activities": the same four handlers as bare activities (reads at once, then the write). "bare agent loop": the same plus three bare model-step activities, what a durable agent without the boundary runs. Target: Tollgate ≥ ×0.9 of bare at 100 in flight.`,
    data: { levels: rows },
  };
}
