import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { MockActivityEnvironment } from '@temporalio/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkToolCall } from '../../activities/boundary/check-tool-call';
import { defineTool, type ToolDefinition } from '../../tools/define-tool';
import { openSqliteStore } from '../../intents/sqlite-store';
import { createModelStep } from '../../activities/models/model-step';
import { createRunTool } from '../../activities/boundary/run-tool';
import { createToolRegistry } from '../../tools/tool-registry';
import type { ModelStepResult } from '../../common/activity-types';
import { testConfig } from '../helpers/test-config';
import { runToolOnce, type FlatBoundaryResult } from '../helpers/run-tool-once';

/** Three tools, one per effect, whose handlers only count: any execution on invalid input is a failure. */
const executions = { read: 0, reversible: 0, irreversible: 0 };
const tools: ToolDefinition[] = [
  defineTool({
    name: 'lookup',
    description: 'x',
    input: z.strictObject({ query: z.string().min(1).max(200), limit: z.number().int().min(1).max(10).optional() }),
    effect: 'read',
    handler: () => (executions.read++, 'ok'),
  }),
  defineTool({
    name: 'book',
    description: 'x',
    input: z.strictObject({ room: z.enum(['blue', 'red']), people: z.array(z.string().max(50)).max(20) }),
    effect: 'reversible_write',
    status: () => 'not_applied',
    handler: () => (executions.reversible++, 'booked'),
  }),
  defineTool({
    name: 'notify',
    description: 'x',
    input: z.strictObject({ to: z.string().email(), body: z.string().max(1000) }),
    effect: 'irreversible_write',
    handler: () => (executions.irreversible++, 'sent'),
  }),
];
const registry = createToolRegistry({ tools });
const store = openSqliteStore(':memory:');
const runTool = createRunTool({ registry, store });
const toolNames = fc.oneof(fc.constantFrom('lookup', 'book', 'notify'), fc.string({ maxLength: 30 }));

/** Malformed arguments: anything, near-misses of the schemas, huge strings, deep nesting. */
const badArguments = fc.oneof(
  fc.anything({ maxDepth: 4 }),
  fc.record(
    { query: fc.oneof(fc.string({ maxLength: 300 }), fc.integer(), fc.constant(null)), limit: fc.oneof(fc.double(), fc.string()) },
    { requiredKeys: [] },
  ),
  fc.record(
    { room: fc.string({ maxLength: 10 }), people: fc.oneof(fc.array(fc.anything(), { maxLength: 30 }), fc.string()) },
    { requiredKeys: [] },
  ),
  fc.record({ to: fc.string({ maxLength: 40 }), body: fc.string({ maxLength: 1200 }), extra: fc.anything() }, { requiredKeys: [] }),
  fc.string({ minLength: 10_000, maxLength: 60_000 }).map((huge) => ({ query: huge, to: huge, room: huge })),
  fc.integer({ min: 50, max: 400 }).map((depth) => {
    // A chain, as JSON from a model or a client can only be a tree.
    let nested: unknown = { leaf: true };
    for (let level = 0; level < depth; level++) nested = level % 2 === 0 ? { query: nested } : { people: [nested] };
    return nested;
  }),
);

function isValid(tool: string, args: unknown): boolean {
  const definition = registry.get(tool);
  return Boolean(definition && definition.input.safeParse(args).success);
}

/** A model that streams one tool call whose input is exactly the given text, JSON or not. */
function rawToolCallModel(toolName: string, input: string): LanguageModelV4 {
  const parts: LanguageModelV4StreamPart[] = [
    { type: 'stream-start', warnings: [] },
    { type: 'tool-call', toolCallId: 't1', toolName, input },
    {
      type: 'finish',
      usage: {
        inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: 1, text: 1, reasoning: undefined },
      },
      finishReason: { unified: 'tool-calls', raw: undefined },
    },
  ];
  return {
    specificationVersion: 'v4',
    provider: 'fuzz',
    modelId: 'fuzz',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('not used')),
    doStream: async () => ({
      stream: new ReadableStream({ start: (controller) => (parts.forEach((part) => controller.enqueue(part)), controller.close()) }),
    }),
  };
}

describe('the boundary under malformed input', () => {
  it('refuses 4,000 malformed calls at the model step and 4,000 at runTool: 0 handler executions, nothing thrown', async () => {
    let refusedAtCheck = 0;
    await fc.assert(
      fc.property(toolNames, badArguments, (tool, args) => {
        fc.pre(!isValid(tool, args));
        const checked = checkToolCall({ registry, request: { callId: 'c', tool, args } });
        expect(['invalid_arguments', 'unknown_tool']).toContain(checked.refusal?.code);
        refusedAtCheck++;
      }),
      { numRuns: 4_000 },
    );
    let refusedAtRun = 0;
    await fc.assert(
      fc.asyncProperty(toolNames, badArguments, async (tool, args) => {
        fc.pre(!isValid(tool, args));
        const result: FlatBoundaryResult = await runToolOnce(runTool, { taskId: 'fuzz', callId: 'c', tool, args });
        expect(result).toMatchObject({ status: 'error', executions: 0 });
        expect(['invalid_arguments', 'unknown_tool']).toContain(result.code);
        refusedAtRun++;
      }),
      { numRuns: 4_000 },
    );
    expect(executions).toEqual({ read: 0, reversible: 0, irreversible: 0 });
    expect(refusedAtCheck + refusedAtRun).toBeGreaterThanOrEqual(7_500);
  });

  it('turns 2,000 raw tool-call outputs of a model (JSON or not) into checked calls or refusals, never a crash', async () => {
    const config = testConfig();
    let cases = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('lookup', 'book', 'notify', 'nope'),
        fc.oneof(
          fc.string({ maxLength: 200 }),
          fc.json({ maxDepth: 4 }),
          fc.string({ maxLength: 50 }).map((text) => `{"query": "${text}`),
        ),
        async (toolName, input) => {
          const modelStep = createModelStep({
            registry,
            config,
            models: new Map([['fuzz', { model: rawToolCallModel(toolName, input) }]]),
          });
          const result: ModelStepResult = await new MockActivityEnvironment().run(modelStep, {
            taskId: 'fuzz',
            step: 0,
            model: 'fuzz',
            messages: [{ role: 'user' as const, content: 'go' }],
          });
          expect(result.toolCalls).toHaveLength(1);
          const [call] = result.toolCalls;
          if (call.refusal) expect(['invalid_arguments', 'unknown_tool']).toContain(call.refusal.code);
          else expect(isValid(toolName, call.args)).toBe(true);
          cases++;
        },
      ),
      { numRuns: 2_000 },
    );
    expect(cases).toBe(2_000);
    expect(executions).toEqual({ read: 0, reversible: 0, irreversible: 0 });
  });
});
