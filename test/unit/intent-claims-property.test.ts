// The stores' claims, commits, releases and leases under random sequences, judged by the write protocol
// (common/write-intent/): every take-over a store grants is a move the lifecycle allows for the effect, a commit lands
// only on its own claim (a late commit of an older attempt changes nothing), and of concurrent claimants one wins.
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EFFECT_TRAITS, type WriteEffect } from '../../common/effects';
import { moveIntent } from '../../common/write-intent/intent-lifecycle';
import type { ToolResult } from '../../common/contract/tools';
import type { IdempotencyStore, IntentRecord } from '../../intents/intent-store';
import { openPostgresStore } from '../../intents/postgres-store';
import { openSqliteStore } from '../../intents/sqlite-store';
import { postgresUrl } from '../helpers/postgres';
import { propertyRuns, type PropertyRun } from '../helpers/property-runs';

/** One store call of a sequence; `attempt` picks an earlier claim's token (late completions of older attempts). */
type Step =
  | { kind: 'claim'; claimants: number; lease: 'held' | 'expired'; reuseToken: boolean; supersede: boolean }
  | { kind: 'commit' | 'release' | 'end_lease'; attempt: number }
  | { kind: 'record_applied' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('claim' as const),
    claimants: fc.integer({ min: 1, max: 3 }),
    lease: fc.constantFrom('held' as const, 'expired' as const),
    reuseToken: fc.boolean(),
    supersede: fc.boolean(),
  }),
  fc.record({ kind: fc.constantFrom('commit' as const, 'release' as const, 'end_lease' as const), attempt: fc.nat(8) }),
  fc.record({ kind: fc.constant('record_applied' as const) }),
);

/** The store's state of one intent, as the test predicts it. */
interface Expected {
  state: 'started' | 'committed';
  owner?: string;
  leaseOver: boolean;
}

/** Runs one sequence on one intent; the broken promises, each naming its step. */
async function runSequence(store: IdempotencyStore, effect: WriteEffect, steps: Step[]): Promise<string[]> {
  const key = `intent-${randomUUID()}`;
  const traits = EFFECT_TRAITS[effect];
  const tokens: string[] = [];
  const problems: string[] = [];
  let expected: Expected | undefined;
  const receipt = (by: string): ToolResult => ({ status: 'success', data: { by } });
  const claim = (owner: string, lease: 'held' | 'expired', supersede?: string) =>
    store.claim({
      key,
      taskId: 't',
      tool: 'w',
      callId: `call-${owner.slice(0, 6)}`,
      argsDigest: 'd',
      effect,
      leaseMs: lease === 'held' ? 600_000 : 0,
      owner,
      supersede,
    });
  for (const [index, current] of steps.entries()) {
    const at = `step ${index} (${JSON.stringify(current)})`;
    if (current.kind === 'claim') {
      const owners = Array.from({ length: current.claimants }, (_, n) =>
        current.reuseToken && n === 0 && tokens.length > 0 ? tokens.at(-1)! : randomUUID(),
      );
      const supersede = current.supersede ? expected?.owner : undefined;
      // Claimants racing for one intent hold their leases: one whose lease ran out may rightly be taken over at once.
      const lease = current.claimants > 1 ? 'held' : current.lease;
      const before = expected;
      const results = await Promise.all(owners.map((owner) => claim(owner, lease, supersede)));
      const winners = results.filter((result) => result.claimed);
      if (winners.length > 1) problems.push(`${at}: ${winners.length} concurrent claimants won`);
      for (const owner of owners) if (!tokens.includes(owner)) tokens.push(owner);
      const won = winners[0];
      if (!won?.claimed) continue;
      const own = before?.state === 'started' && before.owner === won.owner;
      if (before && !own) {
        // The store replaced a record: the lifecycle must allow that move, from where the intent stood.
        const from = before.state === 'committed' ? 'committed' : before.leaseOver ? 'unknown' : 'started';
        const move = before.state === 'committed' ? 'supersede' : 'take_over';
        const moved = moveIntent({ state: from, executions: 1, provenNotApplied: true }, move, traits);
        if (!moved.allowed) problems.push(`${at}: the store let a claim ${move} an intent that was ${from}: ${moved.why}`);
        if (before.state === 'committed' && supersede !== before.owner) problems.push(`${at}: a committed record was replaced unasked`);
      }
      // Its own claim found again: renewed once its lease ran out (where leases are taken over), else unchanged.
      if (!own) expected = { state: 'started', owner: won.owner, leaseOver: lease === 'expired' };
      else if (before.leaseOver && traits.leaseTakeover) expected = { ...before, leaseOver: lease === 'expired' };
    } else if (current.kind === 'record_applied') {
      await store.recordApplied({ key, taskId: 't', tool: 'w', receipt: receipt('check') });
      if (!expected || expected.state === 'started') expected = { state: 'committed', owner: undefined, leaseOver: true };
    } else {
      const owner = tokens.length > 0 ? tokens[current.attempt % tokens.length]! : randomUUID();
      const holds = expected?.state === 'started' && expected.owner === owner;
      if (current.kind === 'commit') {
        const landed = await store.commit({ key, owner, receipt: receipt(owner) });
        // A commit lands only on its own started claim (or writes an absent intent committed: that attempt did take effect).
        if (landed !== (holds || !expected))
          problems.push(`${at}: commit answered ${landed}, its claim ${holds ? 'holds' : 'does not hold'} the intent`);
        if (landed) expected = { state: 'committed', owner, leaseOver: true };
      } else if (current.kind === 'release') {
        const released = await store.release({ key, owner });
        if (released !== holds)
          problems.push(`${at}: release answered ${released}, its claim ${holds ? 'holds' : 'does not hold'} the intent`);
        if (released) expected = undefined;
      } else {
        const ended = await store.endLease({ key, owner });
        if (ended !== holds) problems.push(`${at}: endLease answered ${ended}, its claim ${holds ? 'holds' : 'does not hold'} the intent`);
        if (ended) expected = { ...expected!, leaseOver: true };
      }
    }
    const record: IntentRecord | undefined = await store.get(key);
    if (record?.state !== expected?.state || (expected?.owner !== undefined && record?.owner !== expected.owner))
      problems.push(
        `${at}: the store holds ${JSON.stringify(record && { state: record.state, owner: record.owner })}, expected ${JSON.stringify(expected)}`,
      );
    if (problems.length > 0) break;
  }
  return problems;
}

const opened: IdempotencyStore[] = [];
const runs: PropertyRun[] = [];
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
  propertyRuns.record(runs);
});

const backends: Array<[string, () => IdempotencyStore]> = [
  [
    'sqlite',
    () => openSqliteStore(path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-claims-')), 'intents.db'), { inFlightGraceMs: 0 }),
  ],
  ['postgres', () => openPostgresStore(postgresUrl(), { inFlightGraceMs: 0 })],
];

describe.each(backends)('the %s store under random sequences of claims, commits, releases and lease ends', (name, open) => {
  const store = open();
  opened.push(store);

  it.each(['reversible_write', 'irreversible_write'] as const)(
    'keeps the protocol for a %s',
    async (effect) => {
      await propertyRuns.check({
        property: `claims (${name}, ${effect})`,
        cases: fc.array(step, { minLength: 1, maxLength: 14 }),
        defaultRuns: 60,
        problems: (steps) => runSequence(store, effect, steps),
        runs,
      });
    },
    60_000,
  );
});

describe.each(backends)('counterexamples the property found, on the %s store', (_name, open) => {
  const store = open();
  opened.push(store);
  const request = (key: string, effect: WriteEffect, owner: string, leaseMs: number, supersede?: string) =>
    store.claim({ key, taskId: 't', tool: 'w', callId: `call-${owner}`, argsDigest: 'd', effect, leaseMs, owner, supersede });

  it('a claim under an irreversible effect never supersedes a committed receipt (seeds 707392270, 718941438)', async () => {
    const key = `intent-${randomUUID()}`;
    await expect(store.commit({ key, owner: 'first', receipt: { status: 'success', data: 'sent' } })).resolves.toBe(true);
    await expect(request(key, 'irreversible_write', 'second', 60_000, 'first')).resolves.toMatchObject({
      claimed: false,
      record: { state: 'committed', owner: 'first' },
    });
    // Under a reversible effect, whose receipts are rechecked, the same supersede replaces it.
    await expect(request(key, 'reversible_write', 'third', 60_000, 'first')).resolves.toMatchObject({ claimed: true, owner: 'third' });
  });

  it('a claimant that finds its own claim after its lease ran out renews it, so a concurrent claimant cannot take it over too (seed 970255716)', async () => {
    const key = `intent-${randomUUID()}`;
    await expect(request(key, 'reversible_write', 'mine', 0)).resolves.toMatchObject({ claimed: true });
    const [again, other] = await Promise.all([
      request(key, 'reversible_write', 'mine', 60_000),
      request(key, 'reversible_write', 'other', 60_000),
    ]);
    expect([again.claimed, other.claimed].filter(Boolean)).toHaveLength(1);
    await expect(store.get(key)).resolves.toMatchObject({ state: 'started', owner: again.claimed ? 'mine' : 'other' });
  });
});
