// Two copies of the package in one process (two versions in one tree, a plugin that bundled its own):
// the other copy is a bundle of the same sources, so its classes are distinct from this copy's, and a
// tool built against it throws errors this copy never made. Classification must read them by marker.
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { classifyError } from '../../activities/boundary/classify-error';
import { createRunTool } from '../../activities/boundary/run-tool';
import { TollgateError } from '../../common/tollgate-error';
import { openSqliteStore } from '../../intents/sqlite-store';
import type { defineTool as DefineTool } from '../../tools/define-tool';
import { ToolError } from '../../tools/tool-error';
import { createToolRegistry } from '../../tools/tool-registry';
import { runToolOnce } from '../helpers/run-tool-once';
import { familyClasses, loadFamilyClasses, type LoadedFamilyClass } from '../helpers/error-family';

const ROOT = path.join(__dirname, '..', '..');

/** A family class as either copy exports it. */
type ErrorClass = (new (...args: never[]) => Error) & { isInstance(value: unknown): boolean; marker: string };

/** What the other copy exports: every class of the family, and `defineTool` to build a tool against it. */
interface OtherCopy extends Record<string, unknown> {
  defineTool: typeof DefineTool;
}

/** Arguments each class's constructor needs; the others take a message. */
const CONSTRUCTOR_ARGUMENTS: Record<string, unknown[]> = {
  ToolError: ['mailbox full', 'tool_failure'],
  RequestRefusal: [400, 'bad request'],
  BodyTooLargeError: [{ maxBytes: 10, url: 'http://127.0.0.1/answer' }],
  UnsupportedRegexError: [{ pattern: '(a+)+', reason: 'backtracks' }],
  IntentStoreError: ['claim', new Error('connection refused')],
  McpListingBoundError: [{ message: 'too many tools', bound: 'maxTools' }],
  IncompleteStreamError: [],
  ScriptNotFollowedError: [{ workflowId: 'turn', status: 'completed', followed: false, steps: [], extraRequests: 0 }],
};

function make(type: ErrorClass, name: string): Error {
  return new type(...((CONSTRUCTOR_ARGUMENTS[name] ?? ['something failed']) as never[]));
}

let folder: string;
let other: OtherCopy;
let classes: LoadedFamilyClass[];

beforeAll(async () => {
  // Inside the project's node_modules, so the bundle finds the same dependencies (zod, Temporal) a second copy would.
  folder = path.join(ROOT, 'node_modules', '.cache', 'tollgate-two-copies', `${process.pid}-${Date.now().toString(36)}`);
  mkdirSync(folder, { recursive: true });
  const exports = familyClasses().map(({ name, file }) => `export { ${name} } from ${JSON.stringify(path.join(ROOT, file))};`);
  exports.push(`export { defineTool } from ${JSON.stringify(path.join(ROOT, 'tools', 'define-tool.ts'))};`);
  await build({
    stdin: { contents: exports.join('\n'), resolveDir: ROOT, loader: 'ts' },
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    outfile: path.join(folder, 'other-copy.cjs'),
    logLevel: 'silent',
  });
  other = createRequire(path.join(folder, 'index.cjs'))('./other-copy.cjs') as OtherCopy;
  classes = await loadFamilyClasses();
}, 60_000);

afterAll(() => {
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe('two copies of the package', () => {
  it('are two copies: the bundle holds its own classes, so instanceof fails across them', () => {
    expect(readFileSync(path.join(folder, 'other-copy.cjs'), 'utf8')).toContain('tollgate.error.ToolError');
    const foreign = new (other.ToolError as typeof ToolError)('mailbox full', 'tool_failure');
    expect(other.ToolError).not.toBe(ToolError);
    expect(foreign instanceof ToolError).toBe(false);
    expect(foreign instanceof TollgateError).toBe(false);
  });

  it('classifies a ToolError from the other copy as its own code, with its retry and its wait', () => {
    const OtherToolError = other.ToolError as typeof ToolError;
    expect(classifyError(new OtherToolError('mailbox full', 'tool_failure'))).toEqual({
      code: 'tool_failure',
      retryable: false,
      message: 'mailbox full',
      retryAfterMs: undefined,
    });
    expect(classifyError(new OtherToolError('slow down', 'transient_failure', true, { retryAfterMs: 1_500 }))).toEqual({
      code: 'transient_failure',
      retryable: true,
      message: 'slow down',
      retryAfterMs: 1_500,
    });
    expect(classifyError(new OtherToolError('not yours', 'forbidden'))).toMatchObject({ code: 'forbidden', retryable: false });
  });

  it("runs a write built against the other copy: its ToolError is the handler's verdict (1 execution), not write_interrupted", async () => {
    let executions = 0;
    const OtherToolError = other.ToolError as typeof ToolError;
    const tool = other.defineTool({
      name: 'send',
      description: 'sends a message',
      input: z.strictObject({ to: z.string() }),
      effect: 'reversible_write',
      status: () => 'not_applied',
      handler: () => {
        executions += 1;
        throw new OtherToolError('mailbox full', 'tool_failure');
      },
    });
    const store = openSqliteStore(':memory:');
    try {
      const runTool = createRunTool({ registry: createToolRegistry({ tools: [tool] }), store });
      const result = await runToolOnce(runTool, { taskId: 'task', callId: 'call-0-0', tool: 'send', args: { to: 'ops' } });
      expect(result).toMatchObject({ status: 'error', code: 'tool_failure', retryable: false, message: 'mailbox full', executions: 1 });
      expect(executions).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('recognises every class of the family from the other copy, and only as its own class', () => {
    expect(classes.length).toBeGreaterThanOrEqual(18);
    for (const { name, type } of classes) {
      const foreign = make(other[name] as ErrorClass, name);
      const own = make(type as unknown as ErrorClass, name);
      for (const { name: otherName, type: otherType } of classes) {
        // Across copies, isInstance answers what instanceof answers within one: its class and its ancestors, no other.
        expect({ name, as: otherName, is: otherType.isInstance(foreign) }).toEqual({ name, as: otherName, is: own instanceof otherType });
      }
      expect(TollgateError.isInstance(foreign)).toBe(true);
      // And the other way round: the other copy recognises this copy's instances.
      expect((other[name] as ErrorClass).isInstance(make(type as unknown as ErrorClass, name))).toBe(true);
    }
  });
});
