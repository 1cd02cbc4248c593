import { describe, expect, it } from 'vitest';
import { genAiFinishReason, genAiInputMessages, genAiOutputMessages, genAiProviderName } from '../../activities/activity-telemetry';
import * as semconv from '../../common/gen-ai-semconv';

describe('the GenAI semantic conventions of the spans', () => {
  it('copies every name and value as the pinned @opentelemetry/semantic-conventions exports it from its incubating entry point', async () => {
    // A name held in a variable: the project's module resolution does not type the package's subpath exports.
    const entry = '@opentelemetry/semantic-conventions/incubating';
    const incubating = (await import(entry)) as Record<string, unknown>;
    const copied = Object.entries(semconv);
    expect(copied.length).toBeGreaterThan(20);
    for (const [name, value] of copied) expect(incubating[name], name).toBe(value);
  });

  it("names the provider as the conventions do, from the AI SDK model's provider id", () => {
    expect(genAiProviderName('openai.chat')).toBe('openai');
    expect(genAiProviderName('openai.responses')).toBe('openai');
    expect(genAiProviderName('anthropic.messages')).toBe('anthropic');
    expect(genAiProviderName('google.generative-ai')).toBe('gcp.gemini');
    expect(genAiProviderName('google.vertex.chat')).toBe('gcp.vertex_ai');
    expect(genAiProviderName('mistral.chat')).toBe('mistral_ai');
    expect(genAiProviderName('amazon-bedrock')).toBe('aws.bedrock');
    expect(genAiProviderName('xai.chat')).toBe('x_ai');
    // No name of the conventions: the id's first part (the scripted model's, an openai-compatible entry's name).
    expect(genAiProviderName('tollgate')).toBe('tollgate');
    expect(genAiProviderName('loopback.chat')).toBe('loopback');
  });

  it("writes a turn's messages and a reply in the conventions' input and output message schemas", () => {
    const result = { status: 'success' as const, data: { hits: 1 } };
    expect(
      genAiInputMessages([
        { role: 'user', content: 'find it' },
        { role: 'assistant', text: 'looking', toolCalls: [{ callId: 'call-0-0', tool: 'search_local_sources', args: { query: 'it' } }] },
        { role: 'tool', callId: 'call-0-0', tool: 'search_local_sources', result },
      ]),
    ).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'find it' }] },
      {
        role: 'assistant',
        parts: [
          { type: 'text', content: 'looking' },
          { type: 'tool_call', id: 'call-0-0', name: 'search_local_sources', arguments: { query: 'it' } },
        ],
      },
      { role: 'tool', parts: [{ type: 'tool_call_response', id: 'call-0-0', response: result }] },
    ]);
    expect(genAiOutputMessages(undefined, [{ callId: 'call-1-0', tool: 'save_draft', args: { path: 'a.md' } }], 'tool-calls')).toEqual([
      {
        role: 'assistant',
        parts: [{ type: 'tool_call', id: 'call-1-0', name: 'save_draft', arguments: { path: 'a.md' } }],
        finish_reason: 'tool_call',
      },
    ]);
    expect(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other'].map(genAiFinishReason)).toEqual([
      'stop',
      'length',
      'content_filter',
      'tool_call',
      'error',
      'other',
    ]);
  });
});
