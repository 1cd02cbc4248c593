// Issue 47, item 7: a delegate call (a subagent run as a child agentTurn) against a bare Temporal
// child workflow running the same activities: the subagent's two model steps (the same scripted
// plan through the AI SDK) and its one lookup. Latency is workflow time from the call's start to
// its outcome (the parent's ToolEvent; the bare parent's clock around executeChild). History: the
// child's whole history, and what the call adds to its parent (the parent with the call minus the
// same parent without it). Variants alternate round by round on a worker of their own.
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { defineAgent } from '../../agents/define-agent';
import type { AgentTurnInput, AgentTurnResult, ScriptStep } from '../../common/contract/turn';
import { openSqliteStore } from '../../intents/sqlite-store';
import { createWorker } from '../../worker/create-worker';
import { bareActivities, benchTools } from '../bench-tools';
import type { BenchContext } from '../context';
import { bareReaderActivities, READER_MODEL, readerModel } from '../delegate-model';
import { median, percentile, ratio, table, type SectionResult } from '../lib';

const ROUNDS = Number(process.env.BENCH_DELEGATE_ROUNDS ?? 5);
const CALLS = Number(process.env.BENCH_DELEGATE_CALLS ?? 10);
const GOAL = 1.1;

/** The subagent: looks one thing up with its own (scripted) model, then answers. */
const reader = defineAgent({
  name: 'bench_reader',
  description: 'Looks one thing up.',
  instructions: 'Look it up, then answer.',
  model: READER_MODEL,
  tools: ['lookup'],
});
/** The parent: its only tool is the subagent. */
const lead = defineAgent({ name: 'bench_lead', description: 'Asks the reader.', instructions: 'Ask the reader.', tools: [reader] });

/** The parent's plan: one delegate call (or, for the baseline of its history, a refused call), then the answer. */
function leadScript(delegate: boolean): ScriptStep[] {
  const call = delegate ? { tool: 'bench_reader', args: { request: 'Find the order.' } } : { tool: 'no_such_tool', args: {} };
  return [{ toolCalls: [call] }, { text: 'done' }];
}

type History = temporal.api.history.v1.IHistoryEvent[];
const encoded = (events: History) =>
  events.reduce((total, event) => total + temporal.api.history.v1.HistoryEvent.encode(event).finish().length, 0);

/** A history's events and encoded bytes, with the bytes by event type (where they go). */
async function historyOf(context: BenchContext, workflowId: string) {
  const events = (await context.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const byType: Record<string, number> = {};
  for (const event of events) {
    const name = (temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? String(event.eventType))
      .replace(/^EVENT_TYPE_/, '')
      .toLowerCase();
    byType[name] = (byType[name] ?? 0) + encoded([event]);
  }
  return { events: events.length, bytes: encoded(events), byType };
}

export async function delegateSection(context: BenchContext): Promise<SectionResult> {
  const taskQueue = 'bench-delegate';
  const config = { ...context.config, temporal: { ...context.config.temporal, taskQueue } };
  const store = openSqliteStore(path.join(context.folder, 'delegate.db'));
  const connection = await NativeConnection.connect({ address: context.server.address });
  const worker = await createWorker({
    config,
    connection,
    workflowBundle: context.workflowBundle,
    activities: {
      ...createActivities({
        config,
        tools: benchTools(context.handlers),
        store,
        agents: [reader, lead],
        models: { [READER_MODEL]: readerModel() },
      }),
      ...bareActivities(context.handlers),
      ...bareReaderActivities(),
    } as ReturnType<typeof createActivities>,
  });

  async function tollgateCall(workflowId: string, delegate = true): Promise<AgentTurnResult> {
    const input: AgentTurnInput = {
      taskId: workflowId,
      prompt: 'Ask the reader to find the order.',
      agent: lead.name,
      model: { provider: 'scripted', script: leadScript(delegate) },
    };
    const result = (await context.client.workflow.execute('agentTurn', { taskQueue, workflowId, args: [input] })) as AgentTurnResult;
    const [event] = result.toolCalls;
    const expected = delegate ? 'success' : 'error';
    if (result.status !== 'completed' || event?.status !== expected || (delegate && event.delegate?.status !== 'completed')) {
      throw new Error(`delegate turn ${workflowId} ended ${result.status}, its call ${event?.status} (${event?.code ?? 'no code'})`);
    }
    return result;
  }
  async function bareCall(workflowId: string): Promise<number> {
    const result = await context.client.workflow.execute('bareDelegate', { taskQueue, workflowId, args: ['Find the order.'] });
    const { durationMs, answer } = result as { durationMs: number; answer: string };
    if (answer !== 'The order was found.') throw new Error(`bare delegate ${workflowId} answered "${answer}"`);
    return durationMs;
  }

  const samples = { bare: [] as number[], tollgate: [] as number[] };
  const roundMedians = { bare: [] as number[], tollgate: [] as number[] };
  const run = await worker.runUntil(async () => {
    // One of each first, so that neither variant pays for the first run's warm-up in the figures.
    await tollgateCall('delegate-warm');
    await bareCall('delegate-bare-warm');
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['bare', 'tollgate'] as const) : (['tollgate', 'bare'] as const);
      for (const variant of order) {
        const values: number[] = [];
        for (let call = 0; call < CALLS; call++) {
          const id = `delegate-${variant}-${round}-${call}`;
          values.push(variant === 'bare' ? await bareCall(id) : (await tollgateCall(id)).toolCalls[0].durationMs);
        }
        samples[variant].push(...values);
        roundMedians[variant].push(median(values));
      }
    }
    // Histories: the child's own, and what the call adds to its parent.
    const tollgateChild = (await tollgateCall('delegate-history')).toolCalls[0].delegate!.workflowId;
    await tollgateCall('delegate-history-refused', false);
    await bareCall('delegate-bare-history');
    await context.client.workflow.execute('bareNothing', { taskQueue, workflowId: 'delegate-bare-nothing' });
    const parentAdded = async (withCall: string, without: string) => {
      const [more, base] = [await historyOf(context, withCall), await historyOf(context, without)];
      return { events: more.events - base.events, bytes: more.bytes - base.bytes };
    };
    return {
      tollgate: {
        child: await historyOf(context, tollgateChild),
        parent: await parentAdded('delegate-history', 'delegate-history-refused'),
      },
      bare: {
        child: await historyOf(context, 'delegate-bare-history-child'),
        parent: await parentAdded('delegate-bare-history', 'delegate-bare-nothing'),
      },
    };
  });
  await connection.close();
  await store.close();

  const latency = (variant: 'bare' | 'tollgate') => ({
    median: median(samples[variant]),
    p95: percentile(samples[variant], 0.95),
  });
  const rows = { bare: latency('bare'), tollgate: latency('tollgate') };
  const perRound = roundMedians.tollgate.map((value, round) => value / roundMedians.bare[round]);
  const history = run;
  const tree = (variant: 'bare' | 'tollgate') => ({
    events: history[variant].child.events + history[variant].parent.events,
    bytes: history[variant].child.bytes + history[variant].parent.bytes,
  });
  const kb = (bytes: number) => (bytes / 1024).toFixed(1);
  const variantRow = (variant: 'bare' | 'tollgate', label: string) => [
    label,
    `${rows[variant].median} / ${rows[variant].p95}`,
    `${history[variant].child.events} / ${kb(history[variant].child.bytes)}`,
    `${history[variant].parent.events} / ${kb(history[variant].parent.bytes)}`,
    `${tree(variant).events} / ${kb(tree(variant).bytes)}`,
  ];
  const markdown = table(
    ['variant', 'call latency median / p95 ms', 'child history events / KB', 'added to the parent events / KB', 'call in all events / KB'],
    [
      variantRow('bare', 'bare child workflow (executeChild, same activities)'),
      variantRow('tollgate', 'Tollgate delegate call (child agentTurn)'),
    ],
  );
  const largest = (byType: Record<string, number>) =>
    Object.entries(byType)
      .sort(([, left], [, right]) => right - left)
      .slice(0, 4)
      .map(([name, bytes]) => `${name} ${bytes.toLocaleString('en-US')}`)
      .join(', ');
  const where = `Bytes of the child's history by event type, the largest: Tollgate ${largest(history.tollgate.child.byType)}; bare ${largest(history.bare.child.byType)}.`;
  const goal = (value: number) => (value <= GOAL ? 'met' : 'missed');
  const latencyRatio = rows.tollgate.median / rows.bare.median;
  const eventsRatio = tree('tollgate').events / tree('bare').events;
  const bytesRatio = tree('tollgate').bytes / tree('bare').bytes;
  const ratios = table(
    ['measure', 'Tollgate / bare', `goal ≤ ×${GOAL}`],
    [
      ['call latency, median', ratio(rows.tollgate.median, rows.bare.median), goal(latencyRatio)],
      ['call latency, p95', ratio(rows.tollgate.p95, rows.bare.p95), goal(rows.tollgate.p95 / rows.bare.p95)],
      [
        'call latency, per-round medians',
        `×${median(perRound).toFixed(2)} (${Math.min(...perRound).toFixed(2)}–${Math.max(...perRound).toFixed(2)})`,
        goal(median(perRound)),
      ],
      ['history events, the call in all', ratio(tree('tollgate').events, tree('bare').events), goal(eventsRatio)],
      ['history bytes, the call in all', ratio(tree('tollgate').bytes, tree('bare').bytes), goal(bytesRatio)],
    ],
  );
  return {
    name: 'delegate',
    title: 'Delegate call: a subagent as a child agentTurn against a bare child workflow',
    markdown: `${markdown}\n\n${ratios}\n\nBoth children run the same activities: two model steps of one scripted plan (lookup, then answer) through the AI SDK's streamText, and one lookup. Latency: workflow time from the call's start to its outcome; ${ROUNDS} rounds × ${CALLS} calls per variant, alternating. History: the child's whole history; added to the parent: the parent with the call minus the same parent without it (Tollgate: a refused call instead; bare: an empty workflow). ${where}`,
    data: { rounds: ROUNDS, callsPerRound: CALLS, rows, perRound, history, samples },
  };
}
