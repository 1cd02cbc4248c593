// The error family (common/tollgate-error.ts): every error Tollgate throws is a TollgateError with a
// marker of its own, and the code recognises them by marker, never by class identity.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { inspect } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { TollgateError } from '../../common/tollgate-error';
import { ConfigError } from '../../config/config-error';
import { AnswerLostError, NotSentError } from '../../tools/call-errors';
import { ToolError } from '../../tools/tool-error';
import { declaredClasses, familyClasses, loadFamilyClasses, packageSourceFiles, type LoadedFamilyClass } from '../helpers/error-family';

const ROOT = path.join(__dirname, '..', '..');

/**
 * Error classes outside the family, each with why: none is thrown past its own module, so no other
 * copy of the package can meet it.
 */
const OUTSIDE_THE_FAMILY: Record<string, { folder: string; reason: string }> = {
  TollgateError: { folder: 'common/', reason: 'the family base' },
  // A wait for a place under a tool's concurrency limit, or a handler's timeout: made and read inside the boundary.
  TimeoutError: { folder: 'activities/boundary/', reason: 'made and caught inside the boundary' },
  // A check's work budget that ran out: thrown and caught inside hardened/bounded-schema.ts, which reports it as a result.
  WorkExhausted: { folder: 'hardened/', reason: 'made and caught inside the bounded schema check' },
};

let classes: LoadedFamilyClass[];

beforeAll(async () => {
  classes = await loadFamilyClasses();
});

describe('the error family', () => {
  it('finds the classes it checks', () => {
    expect(familyClasses().map((entry) => entry.name)).toEqual(expect.arrayContaining(['ToolError', 'ConfigError', 'IntentStoreError']));
  });

  it('has no error class outside it but the ones named with their reason', () => {
    const family = new Set(classes.map((entry) => entry.name));
    const outside = declaredClasses()
      .filter(({ name, base }) => /Error$/.test(base) && !family.has(name))
      .filter(({ name, file }) => !(Object.hasOwn(OUTSIDE_THE_FAMILY, name) && file.startsWith(OUTSIDE_THE_FAMILY[name].folder)))
      .map(({ name, file }) => `${file} ${name}`);
    expect(outside).toEqual([]);
  });

  it('gives every class a marker of its own, named after it', () => {
    expect(classes.length).toBeGreaterThanOrEqual(18);
    for (const { name, marker, type } of classes) {
      expect({ name, marker }).toEqual({ name, marker: `tollgate.error.${name}` });
      expect(Object.hasOwn(type, 'marker') && type.marker).toBe(`tollgate.error.${name}`);
    }
    expect(new Set(classes.map((entry) => entry.marker)).size).toBe(classes.length);
  });

  it('is read by isInstance in the code, never by instanceof', () => {
    const names = classes.map((entry) => entry.name).join('|');
    const found = packageSourceFiles().flatMap((file) =>
      readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, index) => (new RegExp(`instanceof (?:${names})\\b`).test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it('recognises a class and its ancestors, and nothing else', () => {
    const toolError = new ToolError('mailbox full', 'tool_failure');
    expect(ToolError.isInstance(toolError)).toBe(true);
    expect(TollgateError.isInstance(toolError)).toBe(true);
    expect(toolError instanceof Error).toBe(true);
    expect(ConfigError.isInstance(toolError)).toBe(false);
    expect(NotSentError.isInstance(new AnswerLostError('lost'))).toBe(false);
    expect(TollgateError.isInstance(new Error('plain'))).toBe(false);
    for (const value of [undefined, null, 'ToolError', 0, {}, { name: 'ToolError', code: 'tool_failure' }]) {
      expect(ToolError.isInstance(value)).toBe(false);
    }
  });

  it('keeps its markers out of sight: not enumerable, not in logs, JSON or equality', () => {
    const error = new ConfigError('config limits.maxSteps: expected a number');
    expect(Object.keys(error)).toEqual(Object.keys(new ConfigError('other')));
    expect(Object.getOwnPropertySymbols(error).every((symbol) => !Object.getOwnPropertyDescriptor(error, symbol)?.enumerable)).toBe(true);
    expect(inspect(error)).not.toContain('tollgate.error');
    expect(JSON.stringify({ ...error })).not.toContain('tollgate');
    expect(error).toEqual(new ConfigError('config limits.maxSteps: expected a number'));
    expect(error.name).toBe('ConfigError');
    expect(error.message).toBe('config limits.maxSteps: expected a number');
  });
});
