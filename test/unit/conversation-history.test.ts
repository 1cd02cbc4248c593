import { describe, expect, it } from 'vitest';
import type { TurnMessage } from '../../common/contract/conversation';
import { boundedHistory } from '../../workflows/conversation';
import { cutMessage, fitHistory, jsonBytes, leftOutMarker, utf8Bytes } from '../../workflows/conversation-history';

/** A string of random UTF-16 code units: ASCII, controls, quotes, accents, CJK, emoji halves and lone surrogates. */
function randomText(length: number, seed: number): string {
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31);
  const pools = [
    [0x20, 0x7e],
    [0x00, 0x1f],
    [0x22, 0x22],
    [0x5c, 0x5c],
    [0xe0, 0x17f],
    [0x4e00, 0x4fff],
    [0xd800, 0xdfff],
  ];
  let text = '';
  for (let index = 0; index < length; index++) {
    const [low, high] = pools[next() % pools.length]!;
    text += String.fromCharCode(low! + (next() % (high! - low! + 1)));
    if (next() % 5 === 0) text += '😀';
  }
  return text;
}

describe('utf8Bytes and jsonBytes', () => {
  it('count what TextEncoder and JSON.stringify make of any string, lone surrogates and escapes included', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const text = randomText(seed * 3, seed);
      expect(utf8Bytes(text)).toBe(new TextEncoder().encode(text).length);
      expect(jsonBytes({ text })).toBe(Buffer.byteLength(JSON.stringify({ text }), 'utf8'));
    }
    expect(jsonBytes('\u0001')).toBe(8);
    expect(jsonBytes('😀')).toBe(6);
    expect(jsonBytes(undefined)).toBe(0);
  });
});

describe('cutMessage', () => {
  it('keeps a message within its bound, cut short with a marker, never splitting a surrogate pair', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const content = randomText(2_000 + seed * 97, seed);
      const bound = 600 + seed * 40;
      const cut = cutMessage({ role: 'user', content }, bound);
      expect(jsonBytes(cut)).toBeLessThanOrEqual(bound);
      const text = (cut as { content: string }).content;
      const kept = text.slice(0, text.indexOf('…[cut short: '));
      expect(content.startsWith(kept)).toBe(true);
      expect(text).toContain(`…[cut short: ${kept.length} of ${content.length} characters kept`);
      const last = kept.charCodeAt(kept.length - 1);
      if (last >= 0xd800 && last <= 0xdbff)
        expect(content.charCodeAt(kept.length)).not.toSatisfy((code: number) => code >= 0xdc00 && code <= 0xdfff);
    }
    const answer: TurnMessage = { role: 'assistant', text: '😀'.repeat(1_000), toolCalls: [{ callId: 'c', tool: 't', args: { a: 'b' } }] };
    const cutAnswer = cutMessage(answer, 1_000);
    expect(jsonBytes(cutAnswer)).toBeLessThanOrEqual(1_000);
    expect(cutAnswer).toMatchObject({ role: 'assistant', toolCalls: [] });
    const small: TurnMessage = { role: 'user', content: 'hello' };
    expect(cutMessage(small, 1_000)).toBe(small);
    const tool: TurnMessage = { role: 'tool', callId: 'c', tool: 't', result: { status: 'success', data: 'x'.repeat(5_000) } };
    expect(cutMessage(tool, 1_000)).toEqual({
      role: 'user',
      content: expect.stringMatching(/^\[a message of \d+ bytes was left out here: over the 1000-byte bound of one message\]$/),
    });
  });
});

describe('fitHistory', () => {
  it('drops the oldest messages until the history fits, counts them, and starts with a question', () => {
    const history: TurnMessage[] = Array.from({ length: 20 }, (_, index) =>
      index % 2 === 0 ? { role: 'user', content: `q${index} ${'é'.repeat(400)}` } : { role: 'assistant', text: `a${index}`, toolCalls: [] },
    );
    const { history: kept, dropped } = fitHistory({ history, budgetBytes: 3_000, messageBytes: 10_000 });
    expect(jsonBytes(kept)).toBeLessThanOrEqual(3_000);
    expect(dropped + kept.length).toBe(20);
    expect(kept[0]!.role).toBe('user');
    expect(kept).toEqual(history.slice(dropped));
    // One more byte of budget than the kept history needs changes nothing; the whole history fits a large budget.
    expect(fitHistory({ history, budgetBytes: jsonBytes(history), messageBytes: 10_000 })).toEqual({ history, dropped: 0 });
    expect(fitHistory({ history, budgetBytes: jsonBytes(history) - 1, messageBytes: 10_000 }).dropped).toBe(2);
  });
});

describe('boundedHistory', () => {
  it('gives a turn whole pairs within both its character and its byte budget', () => {
    const history: TurnMessage[] = Array.from({ length: 10 }, (_, index) =>
      index % 2 === 0 ? { role: 'user', content: '😀'.repeat(100) } : { role: 'assistant', text: 'ok', toolCalls: [] },
    );
    const byChars = boundedHistory(history, 1_000_000);
    expect(byChars).toEqual(history);
    const byBytes = boundedHistory(history, 1_000_000, 1_000);
    expect(jsonBytes(byBytes)).toBeLessThanOrEqual(1_000);
    expect(byBytes.length % 2).toBe(0);
    expect(byBytes).toEqual(history.slice(history.length - byBytes.length));
  });
});

describe('leftOutMarker', () => {
  it('tells the model how many messages it is not given', () => {
    expect(leftOutMarker(1)).toEqual({
      role: 'user',
      content:
        '[1 earlier message of this conversation is left out here, to keep what a turn is given within its size bounds; ask the user to repeat anything you need from it]',
    });
  });
});
