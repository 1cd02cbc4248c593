import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../common/codes';
import { ToolError } from '../../tools/tool-error';
import { ToolOutcome } from '../../tools/tool-outcome';

describe('the error codes a handler may name', () => {
  it('takes every code of the closed set', () => {
    for (const code of ERROR_CODES) {
      expect(ToolOutcome.error('no', { code })).toMatchObject({ ok: false, code });
      expect(new ToolError('no', code).code).toBe(code);
    }
    expect(ToolOutcome.error('no')).toMatchObject({ code: 'tool_failure' });
  });

  it('refuses a code outside it, naming the allowed ones', () => {
    const wrong = 'rate_limited' as ErrorCode;
    expect(() => ToolOutcome.error('slow down', { code: wrong })).toThrow(TypeError);
    expect(() => ToolOutcome.error('slow down', { code: wrong })).toThrow(
      `ToolOutcome.error: code "rate_limited" is not a Tollgate error code; use one of ${ERROR_CODES.join(', ')} (docs/tools.md#error-codes)`,
    );
    expect(() => new ToolError('slow down', wrong)).toThrow(
      /^ToolError: code "rate_limited" is not a Tollgate error code; use one of unknown_tool,/,
    );
    expect(() => ToolOutcome.error('x', { code: 42 as unknown as ErrorCode })).toThrow(/code 42 is not a Tollgate error code/);
  });

  it('are listed in docs/tools.md, each once, and nothing else', () => {
    const page = readFileSync(path.join(__dirname, '../../docs/tools.md'), 'utf8');
    const section = page.split('### Error codes')[1]?.split(/\n#{2,3} /)[0];
    expect(section, 'docs/tools.md has an "Error codes" section').toBeDefined();
    const listed = [...section!.matchAll(/^\| `([a-z_]+)` \|/gm)].map((match) => match[1]);
    expect(listed).toEqual([...ERROR_CODES]);
  });
});
