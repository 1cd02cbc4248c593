// Item 3: history events one tool call adds, by effect level, against one bare activity call.
// Tollgate: a turn whose first step asks for one call, minus the same turn whose call is refused
// (a refused call never leaves the model step, so both turns have the same model steps).
// Bare: a workflow making one call, minus a workflow making none.
import Database from 'better-sqlite3';
import { temporal } from '@temporalio/proto';
import type { ScriptStep } from '../../common/contract/turn';
import type { BenchContext } from '../context';
import { table, type SectionResult } from '../lib';

type Kind = 'read' | 'reversible_write' | 'irreversible_write';

function call(kind: Kind | 'refused'): ScriptStep {
  if (kind === 'read') return { toolCalls: [{ tool: 'lookup', args: { query: 'history' } }] };
  if (kind === 'reversible_write') return { toolCalls: [{ tool: 'put_note', args: { key: 'history', text: 'one note' } }] };
  if (kind === 'irreversible_write') return { toolCalls: [{ tool: 'send_note', args: { to: 'requester', text: 'one note' } }] };
  return { toolCalls: [{ tool: 'no_such_tool', args: {} }] };
}

function eventName(type: number | null | undefined): string {
  return (temporal.api.enums.v1.EventType[type ?? 0] ?? String(type)).replace(/^EVENT_TYPE_/, '');
}

async function eventTypes(context: BenchContext, workflowId: string): Promise<string[]> {
  const history = await context.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map((event) => eventName(event.eventType));
}

/** Whether an event is a patch marker, or the upsert of `TemporalChangeVersion` that goes with one. */
function patchEvent(event: temporal.api.history.v1.IHistoryEvent): boolean {
  if (event.markerRecordedEventAttributes?.markerName === 'core_patch') return true;
  const fields = event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
  return fields ? Object.keys(fields).length === 1 && 'TemporalChangeVersion' in fields : false;
}

/** One whole turn: its events and their encoded bytes, and what of them patch markers take. */
async function turnBytes(context: BenchContext, workflowId: string) {
  const events = (await context.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const bytes = (list: temporal.api.history.v1.IHistoryEvent[]) =>
    list.reduce((total, event) => total + temporal.api.history.v1.HistoryEvent.encode(event).finish().length, 0);
  const patches = events.filter(patchEvent);
  return {
    events: events.length,
    bytes: bytes(events),
    patchMarkers: patches.filter((event) => event.markerRecordedEventAttributes).length,
    patchBytes: bytes(patches),
  };
}

/** What `more` has beyond `base`, by event type (negative when it has fewer). */
function difference(more: string[], base: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of more) counts[name] = (counts[name] ?? 0) + 1;
  for (const name of base) counts[name] = (counts[name] ?? 0) - 1;
  return Object.fromEntries(Object.entries(counts).filter(([, count]) => count !== 0));
}

async function tollgateTurn(context: BenchContext, id: string, kind: Kind | 'refused'): Promise<string[]> {
  const result = await context.runTurn(id, [call(kind), { text: 'done' }], { approveAtOnce: kind === 'irreversible_write' });
  const expected = kind === 'refused' ? 'error' : 'success';
  if (result.toolCalls[0]?.status !== expected)
    throw new Error(`history turn ${id}: the call ended ${result.toolCalls[0]?.status}, expected ${expected}`);
  return eventTypes(context, id);
}

async function bareRun(context: BenchContext, id: string, kind: 'read' | 'write' | 'approved' | 'nothing'): Promise<string[]> {
  if (kind === 'nothing') await context.runBare('bareNothing', id, []);
  else if (kind !== 'approved') await context.runBare('bareOne', id, [kind]);
  else {
    const handle = await context.client.workflow.start('bareOne', { taskQueue: context.taskQueue, workflowId: id, args: ['approved'] });
    for (;;) {
      const waiting = await handle.query<number>('bareWaiting');
      if (waiting === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await handle.signal('bareApprove', 0);
    await handle.result();
  }
  return eventTypes(context, id);
}

export async function historySection(context: BenchContext): Promise<SectionResult> {
  const base = await tollgateTurn(context, 'history-refused', 'refused');
  const bareBase = await bareRun(context, 'history-bare-nothing', 'nothing');
  const rows = [];
  for (const [kind, bareKind] of [
    ['read', 'read'],
    ['reversible_write', 'write'],
    ['irreversible_write', 'approved'],
  ] as const) {
    const tollgate = difference(await tollgateTurn(context, `history-${kind}`, kind), base);
    const bare = difference(await bareRun(context, `history-bare-${kind}`, bareKind), bareBase);
    const sum = (counts: Record<string, number>) => Object.values(counts).reduce((total, count) => total + count, 0);
    rows.push({ kind, bare: sum(bare), tollgate: sum(tollgate), bareEvents: bare, tollgateEvents: tollgate });
  }
  // A second write in the turn shows what each further one adds.
  const secondWrite = { toolCalls: [{ tool: 'put_note', args: { key: 'history-2', text: 'second note' } }] };
  const twoWrites = await context.runTurn('history-two-writes', [call('reversible_write'), secondWrite, { text: 'done' }]);
  const oneWrite = await context.runTurn('history-one-write', [call('reversible_write'), call('refused'), { text: 'done' }]);
  if (twoWrites.status !== 'completed' || oneWrite.status !== 'completed') throw new Error('history turns with two steps did not complete');
  const second = difference(await eventTypes(context, 'history-two-writes'), await eventTypes(context, 'history-one-write'));
  const bareWrite = rows.find((row) => row.kind === 'reversible_write')!;
  const secondSum = Object.values(second).reduce((total, count) => total + count, 0);
  rows.push({
    kind: 'reversible_write (a later one in the same turn)' as Kind,
    bare: bareWrite.bare,
    tollgate: secondSum,
    bareEvents: bareWrite.bareEvents,
    tollgateEvents: second,
  });
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([name, count]) => `${name.toLowerCase()} ${count}`)
      .join(', ');
  const markdown = table(
    ['call', 'bare events', 'Tollgate events', 'added by Tollgate', 'Tollgate events by type'],
    rows.map((row) => [row.kind, row.bare, row.tollgate, row.tollgate - row.bare, list(row.tollgateEvents)]),
  );
  const turns = [];
  for (const [kind, workflowId] of [
    ['refused call', 'history-refused'],
    ['read', 'history-read'],
    ['reversible_write', 'history-reversible_write'],
    ['irreversible_write, approved', 'history-irreversible_write'],
  ]) {
    turns.push({ kind, ...(await turnBytes(context, workflowId)) });
  }
  const perTurn = table(
    ['turn (one call, then the answer)', 'events', 'bytes (encoded)', 'patch markers', 'bytes of patch markers and TemporalChangeVersion'],
    turns.map((turn) => [
      turn.kind,
      turn.events,
      turn.bytes.toLocaleString('en-US'),
      turn.patchMarkers,
      turn.patchBytes.toLocaleString('en-US'),
    ]),
  );
  const growth = await historyByStep(context);
  return {
    name: 'history-events',
    title: 'History events per tool call',
    markdown: `${markdown}\n\nTollgate: a turn with one such call minus the same turn with a refused call; bare: one activity call (the irreversible one after a signal) minus an empty workflow. Target: a read adds no events over a bare activity.\n\n${perTurn}\n\nWhole turns: every event of the turn, encoded as the server stores it. Workflow changes ship as new worker builds (Worker Versioning), so a turn records no patch marker.\n\n${growth.markdown}`,
    data: { rows, turns, tollgateBase: base.length, bareBase: bareBase.length, byStep: growth.rows },
  };
}

/**
 * History per step of turns that read one 8,000-character page per step, from 2 to 32 steps: what
 * the turn records in all, per step, and what its last step added. Flat when no step records the
 * earlier messages and results again (they are kept once in the store and sent by reference).
 */
async function historyByStep(context: BenchContext) {
  const rows = [];
  // What the turn kept in the worker's store (the bench worker's SQLite file), read beside it.
  const store = new Database(context.config.store.sqliteFile, { readonly: true, fileMustExist: true });
  const kept = store.prepare<[number, string], { entries: number; bytes: number | null }>(
    'SELECT count(*) AS entries, sum(length(CAST(content AS BLOB))) AS bytes FROM kept_contents WHERE substr(key, 1, ?) = ?',
  );
  for (const steps of [2, 4, 8, 16, 32]) {
    const id = `history-steps-${steps}`;
    const script: ScriptStep[] = [
      ...Array.from({ length: steps }, (_, page) => ({ toolCalls: [{ tool: 'read_page', args: { page } }] })),
      { text: 'read' },
    ];
    const result = await context.runTurn(id, script);
    if (result.status !== 'completed') throw new Error(`history turn ${id} ended ${result.status}`);
    const events = (await context.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    let total = 0;
    const beforeStep: number[] = [];
    for (const event of events) {
      if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'modelStep') beforeStep.push(total);
      total += temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    }
    const { entries, bytes: keptBytes } = kept.get(id.length + 1, `${id}/`)!;
    rows.push({
      steps,
      bytes: total,
      perStep: total / steps,
      lastStepAdded: beforeStep.at(-1)! - beforeStep.at(-2)!,
      keptEntries: entries,
      keptBytes: keptBytes ?? 0,
    });
  }
  store.close();
  const markdown = table(
    [
      'steps (one 8,000-character read each)',
      'history KB',
      'KB per step',
      'bytes the last read step added',
      'kept in the store: entries / KB',
      'store KB per step',
    ],
    rows.map((row) => [
      row.steps,
      (row.bytes / 1024).toFixed(1),
      (row.perStep / 1024).toFixed(1),
      row.lastStepAdded.toLocaleString('en-US'),
      `${row.keptEntries} / ${(row.keptBytes / 1024).toFixed(1)}`,
      (row.keptBytes / 1024 / row.steps).toFixed(1),
    ]),
  );
  return {
    rows,
    markdown: `${markdown}\n\nEach model step is sent the messages added since the previous one and the transcript that step kept in the store, each result over 1,024 characters by reference: the history grows by the same bytes at every step. The store holds each message once (a link per step, each large result once, as redacted), so it too grows by about the same bytes per step; it is pruned with store.retention.`,
  };
}
