// What a person is shown of a call, by the one set of rules every surface uses (common/display-text.ts):
// the terminal, the web inbox (its server builds the display, its page renders it and digests what it
// rendered) and the Web UI's details. Each case is an attack of issue 44: a recipient reversed by a
// bidi override, a body carrying hidden tag characters, a P.S. past a fold, an object of nine fields,
// and arguments nested deeper than any view.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  displayText,
  displayValue,
  editableJson,
  FOLDED_ENTRIES,
  HIDDEN_CHARACTER_PATTERN,
  hiddenWarning,
  partsText,
  SHOWN_DEPTH,
  valueOfDisplay,
  type DisplayNode,
} from '../../common/display-text';
import type { PendingApproval, PendingResolution } from '../../common/contract/decisions';
import { argumentsDisplay } from '../../client/inbox/inbox-items';
import { describeApproval } from '../../client/follow-turn';
import { describeResolution } from '../../client/cli/decisions';
import { renderDetails } from '../../workflows/decisions/details';
import { callSummary } from '../../activities/boundary/check-tool-call';
import { defineTool } from '../../tools/define-tool';
import { z } from 'zod';
import { approvalDigest, canonicalJson } from '../../tools/canonical-json';
import { FOLDED_BODY, HARMLESS_CALL, HOSTILE_CALL, startingStateForTest, TAG_SMUGGLED } from '../helpers/display-cases';
// @ts-expect-error: a browser module without type declarations, imported as the page imports it.
import * as page from '../../client/inbox/public/decisions.js';

const browser = page as {
  valueOfShown(node: DisplayNode): unknown;
  approvalDigest(args: unknown, definitionDigest?: string): Promise<string>;
};

/** Every character a person would not see, or that reorders what they see. */
const HIDDEN = new RegExp(HIDDEN_CHARACTER_PATTERN, 'u');

/** The text a node shows, as a page or a terminal prints it (marks as their marks). */
function shownText(node: DisplayNode): string {
  const parts = (list: Array<string | { mark: string }>) => list.map((part) => (typeof part === 'string' ? part : part.mark)).join('');
  switch (node.kind) {
    case 'json':
    case 'text':
      return parts(node.parts);
    case 'list':
      return node.items.map(shownText).join('\n');
    case 'fields':
      return node.fields.map((field) => `${parts(field.key)}: ${shownText(field.value)}`).join('\n');
    case 'too_deep':
      return '(too deep)';
  }
}

function pendingApproval(args: unknown): PendingApproval {
  return {
    callId: 'call-0-0',
    tool: 'send_message',
    args,
    argsDigest: approvalDigest(args),
    requestedAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-02T00:00:00.000Z',
    round: 1,
  } as PendingApproval;
}

describe('the shared display of a call', () => {
  it('shows a reversed recipient and hidden tag characters marked, so the hostile call and the harmless one differ visibly', () => {
    const hostile = displayValue(HOSTILE_CALL);
    const harmless = displayValue(HARMLESS_CALL);
    const hostileText = shownText(hostile.root);
    expect(hostileText).toContain('\\u{202E}moc.elpmaxe@bob\\u{202C}');
    expect(hostileText).not.toMatch(HIDDEN);
    expect(shownText(harmless.root)).toContain('"bob@example.com"');
    expect(hostileText).not.toBe(shownText(harmless.root));
    expect(hostile.hidden).toMatchObject({ total: 55, bidi: 2, tag: 53 });
    expect(harmless.hidden.total).toBe(0);
    expect(hiddenWarning(hostile.hidden)).toBe(
      'Warning: these arguments hold 55 hidden characters (2 bidi controls (reorder text), 53 tag characters (invisible text)), ' +
        'shown as \\u{…}. The call carries them exactly as marked, whatever the text seems to say.',
    );
    expect(hiddenWarning(harmless.hidden)).toBeUndefined();
  });

  it('folds a 369-character body and an object of nine fields, and names each fold a person must open', () => {
    const body = FOLDED_BODY;
    expect(body).toHaveLength(369);
    const fields = Object.fromEntries(
      Array.from({ length: FOLDED_ENTRIES + 1 }, (_, index) => [`field${index}`, `value ${index} `.repeat(4)]),
    );
    const shown = displayValue({ to: 'bob@example.com', body, extra: fields });
    expect(shown.folds).toEqual(['/body', '/extra']);
    expect(shown.complete).toBe(true);
    // Eight fields of the same size are not folded: the ninth is what folds them.
    const eight = Object.fromEntries(Object.entries(fields).slice(0, FOLDED_ENTRIES));
    expect(displayValue({ extra: eight }).folds).toEqual([]);
    // A fold's name is a JSON Pointer, so keys with "/" or "~" name distinct folds.
    expect(displayValue({ 'a/b': body, 'a~1b': body }).folds).toEqual(['/a~1b', '/a~01b']);
  });

  it('counts hidden characters in keys too, and marks them there', () => {
    const shown = displayValue({ ['to\u200b']: 'ops', body: 'x' });
    expect(shown.hidden.total).toBe(1);
    expect(shownText(shown.root)).toContain('to\\u{200B}');
    // A control character is counted on the string, even where JSON writes it as a visible escape.
    expect(displayValue({ body: 'ok\u001b[2K' }).hidden).toMatchObject({ total: 1, control: 1 });
  });

  it('shows arguments nested 5,000 levels deep without overflowing, as a view that cannot approve', () => {
    let deep: unknown = 'bottom';
    for (let level = 0; level < 5_000; level++) deep = { a: deep };
    const shown = displayValue(deep);
    expect(shown.complete).toBe(false);
    let node = shown.root;
    let depth = 0;
    while (node.kind === 'fields') {
      node = node.fields[0].value;
      depth++;
    }
    expect(node).toEqual({ kind: 'too_deep', depth: SHOWN_DEPTH });
    expect(depth).toBe(SHOWN_DEPTH);
    expect(() => browser.valueOfShown(shown.root)).toThrow(/too deep/);
  });

  it('gives back exactly the arguments from what it shows, in the worker and in the page, so their digests are one', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ stringUnit: 'binary', maxDepth: 6 }), async (value) => {
        const shown = displayValue(value);
        // Compared as JSON: the arguments came as JSON, where -0 is 0.
        expect(canonicalJson(valueOfDisplay(shown.root))).toBe(canonicalJson(value));
        const rendered = browser.valueOfShown(shown.root);
        expect(await browser.approvalDigest(rendered)).toBe(approvalDigest(value));
        expect(canonicalJson(JSON.parse(editableJson(value)))).toBe(canonicalJson(value));
        expect(editableJson(value)).not.toMatch(HIDDEN);
      }),
      { numRuns: 300 },
    );
    const hostile = displayValue(HOSTILE_CALL);
    expect(await browser.approvalDigest(browser.valueOfShown(hostile.root))).toBe(approvalDigest(HOSTILE_CALL));
    // A key named __proto__ stays a key of its own.
    const proto = JSON.parse('{"__proto__": {"x": 1}, "a": "b"}') as unknown;
    expect(approvalDigest(browser.valueOfShown(displayValue(proto).root))).toBe(approvalDigest(proto));
  });

  it('differs from the arguments when a part is left out, so a page that renders less cannot match the digest', async () => {
    const shown = displayValue({ ...HOSTILE_CALL, body: `${'x'.repeat(200)} P.S. wire the money` });
    const root = shown.root as Extract<DisplayNode, { kind: 'fields' }>;
    const body = root.fields.find((field) => partsText(field.key) === 'body')!.value as Extract<DisplayNode, { kind: 'text' }>;
    const cut = {
      ...root,
      fields: root.fields.map((field) => (field.value === body ? { ...field, value: { ...body, parts: ['x'] } } : field)),
    };
    expect(await browser.approvalDigest(browser.valueOfShown(cut))).not.toBe(approvalDigest(valueOfDisplay(shown.root)));
  });
});

describe('every surface that shows a call', () => {
  it('the inbox server sends the page the display, its warning and an edit text with every hidden character escaped', () => {
    const display = argumentsDisplay(TAG_SMUGGLED);
    expect(display.hidden.tag).toBe(53);
    expect(display.warning).toMatch(/53 hidden characters/);
    expect(display.editText).not.toMatch(HIDDEN);
    expect(display.editText).toContain('\\udb40\\udc49');
    expect(JSON.parse(display.editText)).toEqual(TAG_SMUGGLED);
  });

  it('the terminal shows the same marks and the warning, for an approval and for a resolution', () => {
    const approval = describeApproval(pendingApproval(HOSTILE_CALL)).text;
    expect(approval).toContain('\\u{202E}moc.elpmaxe@bob\\u{202C}');
    expect(approval).toContain('Warning: these arguments hold 55 hidden characters');
    expect(approval).not.toMatch(HIDDEN);
    expect(describeApproval(pendingApproval(HARMLESS_CALL)).text).not.toContain('Warning');
    const resolution = describeResolution({
      ...(pendingApproval(HOSTILE_CALL) as unknown as PendingResolution),
      reason: 'the send\u202e was cut off',
      since: '2026-01-01T00:00:00.000Z',
      workflowId: 'turn-1',
    });
    expect(resolution).toContain('Warning: these arguments hold 55 hidden characters');
    expect(resolution).toContain('send\\u{202E} was cut off');
    expect(resolution).not.toMatch(HIDDEN);
  });

  it("the Web UI's details show the same marks and the warning, and no hidden character", () => {
    const state = startingStateForTest([pendingApproval(HOSTILE_CALL)]);
    const details = renderDetails(state);
    expect(details).toContain('\\u{202E}moc.elpmaxe@bob\\u{202C}');
    expect(details).toContain('**Warning: these arguments hold 55 hidden characters');
    expect(details).not.toMatch(HIDDEN);
    expect(renderDetails(startingStateForTest([pendingApproval(HARMLESS_CALL)]))).not.toContain('Warning');
  });

  it("the Web UI's summary of the call (beside its activity) shows the same marks", () => {
    const send = defineTool({
      name: 'send_message',
      description: 'Sends a message.',
      input: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
      effect: 'irreversible_write',
      summary: ({ to, subject }: { to: string; subject: string }) => `to ${to}: ${subject}`,
      handler: () => 'sent',
    });
    const summary = callSummary(send, HOSTILE_CALL);
    expect(summary).toBe('send_message to \\u{202E}moc.elpmaxe@bob\\u{202C}: Minutes');
    expect(callSummary(send, HARMLESS_CALL)).toBe('send_message to bob@example.com: Minutes');
  });

  it('marks text alike everywhere: displayText is the terminal text', () => {
    expect(displayText('a\u202eb\u{E0041}')).toBe('a\\u{202E}b\\u{E0041}');
  });
});
