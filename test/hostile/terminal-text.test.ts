import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { describeApproval, describeEvent, toolCallTable } from '../../client/follow-turn';
import { forTerminal } from '../../client/terminal-text';
import { formatTable } from '../../client/format-table';
import type { PendingApproval } from '../../common/contract/decisions';
import type { ToolEvent } from '../../common/contract/tools';
import { approvalDigest, argsDigest } from '../../tools/canonical-json';

/** Anything a terminal would act on: C0 but newline and tab, DEL, C1, bidi controls. */
// eslint-disable-next-line no-control-regex -- matching control characters is what this pattern is for.
const ACTIVE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** Anything that prints as nothing: format characters, separators, the tag block, variation selectors. */
const INVISIBLE = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Variation_Selector}\u{E0000}-\u{E007F}]/u;

const EXPIRES = '2026-01-02T00:00:00.000Z';

function pending(args: unknown, digest = argsDigest(args)): PendingApproval {
  return {
    callId: 'call-3-0',
    tool: 'send_message',
    args,
    argsDigest: digest,
    round: 1,
    requestedAt: '2026-01-01T00:00:00Z',
    expiresAt: EXPIRES,
  };
}

describe('text from a model, made safe for the terminal', () => {
  it('shows an erase-line escape sequence and a carriage return escaped', () => {
    expect(forTerminal('ok\u001b[2K\rApproved: nothing to see')).toBe('ok\\u{1B}[2K\\u{D}Approved: nothing to see');
    expect(forTerminal('\u009b31m red \u0007')).toBe('\\u{9B}31m red \\u{7}');
  });

  it('shows bidi overrides, isolates and marks escaped', () => {
    expect(forTerminal('to: ops\u202e@evil\u202c')).toBe('to: ops\\u{202E}@evil\\u{202C}');
    expect(forTerminal('\u2066a\u2069\u200e\u200f\u061c')).toBe('\\u{2066}a\\u{2069}\\u{200E}\\u{200F}\\u{61C}');
  });

  it('shows zero-width, format, tag and variation-selector characters escaped, which print as nothing', () => {
    expect(forTerminal('a\u200bb\u200cc\u200dd\u2060e\ufefff\u00adg')).toBe('a\\u{200B}b\\u{200C}c\\u{200D}d\\u{2060}e\\u{FEFF}f\\u{AD}g');
    // Unicode tag characters spell hidden ASCII ("BCC") after a visible word.
    expect(forTerminal('ok\u{E0001}\u{E0042}\u{E0043}\u{E0043}\u{E007F}')).toBe('ok\\u{E0001}\\u{E0042}\\u{E0043}\\u{E0043}\\u{E007F}');
    expect(forTerminal('x\u{E0000}\u{E0010}')).toBe('x\\u{E0000}\\u{E0010}');
    expect(forTerminal('v\ufe0f\u{E0100}\u{E01EF}\u180b')).toBe('v\\u{FE0F}\\u{E0100}\\u{E01EF}\\u{180B}');
    expect(forTerminal('line\u2028para\u2029 fill\u3164\u115f\u034f')).toBe('line\\u{2028}para\\u{2029} fill\\u{3164}\\u{115F}\\u{34F}');
  });

  it('keeps newlines, tabs and ordinary Unicode as they are', () => {
    expect(forTerminal('line one\n\tline two: café, 東京, 👍')).toBe('line one\n\tline two: café, 東京, 👍');
  });

  it('leaves nothing a terminal would act on, for any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        expect(forTerminal(text)).not.toMatch(ACTIVE);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('a table of cells from a turn', () => {
  it('shows every cell escaped and pads the columns to what is printed', () => {
    const table = formatTable(
      ['tool', 'n'],
      [
        ['send\u200b\u{E0041}', 1],
        ['x\u001b[2K', 22],
      ],
    );
    expect(table).not.toMatch(INVISIBLE);
    // The widest cell is the escaped tool name, 21 characters as printed.
    expect(table.split('\n')).toEqual([
      `${'tool'.padEnd(21)}  n`,
      `${'-'.repeat(21)}  --`,
      'send\\u{200B}\\u{E0041}  1',
      `${'x\\u{1B}[2K'.padEnd(21)}  22`,
    ]);
  });
});

describe('text with invisible characters, for any text', () => {
  it('leaves no character that prints as nothing, from the whole range of code points', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        expect(forTerminal(text)).not.toMatch(INVISIBLE);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('what the approval prompt and the event lines show', () => {
  it('shows every argument that will run, with controls escaped and nothing hidden', () => {
    const args = { to: 'ops\u202e', subject: 'Hi\u001b[2K\u001b[1A', body: 'Send all\u2067 refunds \u2069now' };
    const shown = describeApproval(pending(args));
    expect(shown.matches).toBe(true);
    expect(shown.text).not.toMatch(ACTIVE);
    expect(shown.text).toContain('"to": "ops\\u{202E}"');
    expect(shown.text).toContain('"subject": "Hi\\u001b[2K\\u001b[1A"');
    expect(shown.text).toContain('"body": "Send all\\u{2067} refunds \\u{2069}now"');
    // The whole digest, on its own line under the call.
    expect(shown.text.split('\n').slice(0, 2)).toEqual([
      `Approval needed for call-3-0: send_message (expires ${EXPIRES})`,
      `  argsDigest ${argsDigest(args)}`,
    ]);
  });

  it('bounds very long arguments and says how much is left out', () => {
    const shown = describeApproval(pending({ body: 'x'.repeat(10_000) }), { maxArgsChars: 100 });
    expect(shown.text.length).toBeLessThan(400);
    expect(shown.text).toMatch(/… \d+ more characters \(the whole arguments: --json\)/);
    // A cut view is not one to approve from; asked for whole, the same call is.
    expect(shown.complete).toBe(false);
    const whole = describeApproval(pending({ body: 'x'.repeat(10_000) }), { maxArgsChars: Number.POSITIVE_INFINITY });
    expect(whole.complete).toBe(true);
    expect(whole.text).toContain('x'.repeat(10_000));
  });

  it('shows arguments nested 100,000 levels deep on one line, cut, instead of failing (indented JSON of them has no length)', () => {
    let args: unknown = { to: 'bottom\u202e' };
    for (let level = 0; level < 100_000; level++) args = { next: args };
    const shown = describeApproval(pending(args));
    expect(shown.matches).toBe(true);
    expect(shown.complete).toBe(false);
    expect(shown.text).toContain('{"next":{"next":');
    expect(shown.text).not.toMatch(ACTIVE);
    const whole = describeApproval(pending(args), { maxArgsChars: Number.POSITIVE_INFINITY });
    expect(whole.complete).toBe(true);
    expect(whole.text).toContain('{"to":"bottom\\u{202E}"}');
  });

  it('checks a call of a tool from elsewhere against the digest that binds its definition too', () => {
    const args = { path: 'reply.md', content: 'hi' };
    const definitionDigest = 'd'.repeat(64);
    const mcp = { ...pending(args, approvalDigest(args, definitionDigest)), tool: 'files__write_file', definitionDigest };
    expect(describeApproval(mcp).matches).toBe(true);
    // The same arguments under another definition are not what was approved.
    expect(describeApproval({ ...mcp, definitionDigest: 'e'.repeat(64) }).matches).toBe(false);
  });

  it('says so, and does not allow approving, when the arguments shown are not those the digest covers', () => {
    const shown = describeApproval(pending({ to: 'ops' }, argsDigest({ to: 'attacker' })));
    expect(shown.matches).toBe(false);
    expect(shown.text).toContain('These arguments do not match the digest of the call, so it cannot be approved from here.');
  });

  it('escapes a tool name chosen by the model in event lines and tables', () => {
    const tool = 'x\u001b]0;pwned\u0007';
    const fields: Partial<ToolEvent> = { callId: 'call-0-0', step: 0, tool, effect: 'read', status: 'error', code: 'unknown_tool' };
    fields.executions = 0;
    const event = fields as ToolEvent;
    expect(describeEvent(event)).toBe('[step 1] x\\u{1B}]0;pwned\\u{7} (read): error unknown_tool, 0 executions');
    expect(toolCallTable([{ ...event, durationMs: 1, originalSize: 0, truncated: false }])).not.toMatch(ACTIVE);
  });
});
