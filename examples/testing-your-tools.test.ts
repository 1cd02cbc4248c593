// Testing your own tools with the testing kit: reversible and irreversible writes, turns on the
// time-skipping server, real handler executions counted. In your project the imports are
// 'tollgate' and 'tollgate/testing'; run `npx tollgate setup` once to install the server binaries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, ToolError } from '../index';
import { createTestEnvironment, script, type TestEnvironment } from '../testing';

/** The remote system your tools talk to: seats held per idempotency key, cards charged. */
const remote = {
  holds: new Map<string, string>(),
  charges: [] as number[],
  failNextHolds: 0,
  rooms: new Map<string, string>(),
  /** The next booking is made, but its answer is lost and the hotel's ledger stops answering. */
  loseNextBookingAnswer: false,
  ledgerDown: false,
};

/** A reversible write: holding a seat can be looked up by its idempotency key, so a retry is safe. */
const holdSeat = defineTool({
  name: 'hold_seat',
  description: 'Holds a seat on a flight.',
  input: z.strictObject({ flight: z.string(), seat: z.string() }),
  effect: 'reversible_write',
  maxAttempts: 3,
  status: (_args, { idempotencyKey }) => (remote.holds.has(idempotencyKey) ? { state: 'applied', data: 'held' } : 'not_applied'),
  handler: ({ flight, seat }, { idempotencyKey }) => {
    if (remote.failNextHolds-- > 0) throw new ToolError('the airline did not answer', 'transient_failure');
    remote.holds.set(idempotencyKey!, `${flight}/${seat}`);
    return 'held';
  },
});

/** An irreversible write: a charge cannot be taken back, so it waits for a person's approval and never retries blindly. */
const chargeCard = defineTool({
  name: 'charge_card',
  description: 'Charges the customer.',
  input: z.strictObject({ cents: z.number().int().positive() }),
  effect: 'irreversible_write',
  handler: ({ cents }) => {
    remote.charges.push(cents);
    return { charged: cents };
  },
});

/** A reversible write whose status check may not be able to tell: then a person says what happened. */
const bookRoom = defineTool({
  name: 'book_room',
  description: 'Books a hotel room.',
  input: z.strictObject({ hotel: z.string() }),
  effect: 'reversible_write',
  maxAttempts: 3,
  status: (_args, { idempotencyKey }) => {
    if (remote.ledgerDown) return 'unknown';
    return remote.rooms.has(idempotencyKey) ? { state: 'applied', data: 'booked' } : 'not_applied';
  },
  handler: ({ hotel }, { idempotencyKey }) => {
    remote.rooms.set(idempotencyKey!, hotel);
    if (remote.loseNextBookingAnswer) {
      remote.loseNextBookingAnswer = false;
      remote.ledgerDown = true;
      throw new ToolError('the connection broke after the booking was sent', 'transient_failure');
    }
    return 'booked';
  },
});

let kit: TestEnvironment;
beforeAll(async () => {
  kit = await createTestEnvironment({ tools: [holdSeat, chargeCard, bookRoom] });
});
afterAll(() => kit?.teardown());

describe('my booking tools', () => {
  it('retries a reversible write after transient failures: 3 executions, held once', async () => {
    remote.failNextHolds = 2;
    const before = kit.executions('hold_seat');
    const result = await kit.run('hold 12A', [script.toolCall('hold_seat', { flight: 'LX8', seat: '12A' }), script.text('Held.')]);
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'hold_seat', status: 'success', executions: 3 })]);
    expect([kit.executions('hold_seat') - before, remote.holds.size]).toEqual([3, 1]);
  });

  it('waits out a rate-limited model (429, Retry-After 20 s) without waiting 20 s', async () => {
    const result = await kit.run('hi', [script.rateLimited({ retryAfter: '20s' }), script.text('Hello.')]);
    expect(result).toMatchObject({ status: 'completed', answer: 'Hello.' });
  });

  it('charges exactly once after approval', async () => {
    const before = kit.executions('charge_card');
    const turn = await kit.startTurn('charge', [script.toolCall('charge_card', { cents: 4200 }), script.text('Charged.')]);
    await kit.approve(turn);
    expect((await turn.result()).toolCalls).toEqual([expect.objectContaining({ status: 'success', executions: 1 })]);
    expect(kit.executions('charge_card') - before).toBe(1);
  });

  it('never charges when a person denies it', async () => {
    const before = kit.executions('charge_card');
    const turn = await kit.startTurn('charge', [script.toolCall('charge_card', { cents: 990 }), script.text('Not charged.')]);
    await kit.deny(turn);
    expect((await turn.result()).toolCalls).toEqual([expect.objectContaining({ status: 'denied', executions: 0 })]);
    expect(kit.executions('charge_card')).toBe(before);
  });

  it('resumes a model stream cut after 3 chunks only when a person says so: one request before, two after', async () => {
    const turn = await kit.startTurn('greet', [script.cutAfter(3), script.text('Hello again.')]);
    const waiting = await kit.pendingResume(turn);
    expect(waiting).toMatchObject({ step: 0, chunks: 3 });
    await kit.resume(turn, 'retry');
    const result = await turn.result();
    expect(result).toMatchObject({ status: 'completed', answer: 'Hello again.' });
    expect(result.modelInterruptions).toEqual([expect.objectContaining({ step: 0, decision: 'retry' })]);
  });

  it('asks a person when nobody can tell whether a booking happened, and takes their word: 1 execution, booked once', async () => {
    remote.loseNextBookingAnswer = true;
    const before = kit.executions('book_room');
    const turn = await kit.startTurn('book', [script.toolCall('book_room', { hotel: 'Alpenhof' }), script.text('Booked.')]);
    const waiting = await kit.pendingResolution(turn);
    expect(waiting).toMatchObject({ tool: 'book_room', args: { hotel: 'Alpenhof' } });
    remote.ledgerDown = false;
    await kit.resolve(turn, 'applied', { note: 'found in the hotel system' });
    const result = await turn.result();
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'book_room', status: 'success', executions: 1 })]);
    expect([kit.executions('book_room') - before, remote.rooms.size]).toEqual([1, 1]);
  });

  it('lets an approval expire after 24 hours of server time, in well under a second of real time', async () => {
    const before = kit.executions('charge_card');
    // The turn's deadline must outlast the wait, or the turn ends deadline_exceeded before its model answers.
    const limits = { deadlineMs: 25 * 3_600_000 };
    const turn = await kit.startTurn('charge', [script.toolCall('charge_card', { cents: 100 }), script.text('Expired.')], { limits });
    await kit.pendingApproval(turn);
    const started = Date.now();
    await kit.skip('24h');
    const result = await turn.result();
    const wall = Date.now() - started;
    expect(result.toolCalls).toEqual([expect.objectContaining({ code: 'approval_expired', executions: 0 })]);
    expect(kit.executions('charge_card')).toBe(before);
    expect(wall).toBeLessThan(1_000);
  });
});
