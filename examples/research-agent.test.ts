// The research agent of examples/research-agent.ts on the testing kit, over the corpus in
// examples/corpus: it searches and reads with the built-in tools, may call nothing else, and its
// typed answer names its sources. In your project the imports are 'tollgate' and 'tollgate/testing'.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtInTools } from '../index';
import { createTestEnvironment, script, testConfig, type TestEnvironment } from '../testing';
import { research, researchTools, type ResearchOutput } from './research-agent';

const corpus = path.join(__dirname, 'corpus');
let kit: TestEnvironment;
beforeAll(async () => {
  const config = testConfig({ corpus });
  // The worker serves every built-in tool; the agent may call its two only.
  kit = await createTestEnvironment({ tools: builtInTools(config), agents: [research], config: { corpus } });
});
afterAll(() => kit?.teardown());

describe('the research agent', () => {
  it('uses the read tools of the built-in set', () => {
    expect(researchTools(testConfig({ corpus })).map((tool) => tool.name)).toEqual(['search_local_sources', 'get_document']);
  });

  it('searches the corpus, reads the document, and answers with its sources', async () => {
    const output: ResearchOutput = {
      answer: 'Annual plans are refunded in full within 30 days of purchase.',
      sources: ['refund-policy'],
    };
    const result = await kit.run(
      'How long do customers have to ask for a refund of an annual plan?',
      [
        script.toolCall('search_local_sources', { query: 'annual plan refund' }),
        script.toolCall('get_document', { id: 'refund-policy' }),
        script.text(JSON.stringify(output)),
      ],
      { agent: 'research' },
    );
    expect(result).toMatchObject({ status: 'completed', output, agent: { name: 'research' } });
    expect(result.toolCalls.map((call) => [call.tool, call.status, call.executions])).toEqual([
      ['search_local_sources', 'success', 1],
      ['get_document', 'success', 1],
    ]);
  });

  it('may not write: a draft it asks for is refused and never saved', async () => {
    const before = kit.executions('save_draft');
    const result = await kit.run(
      'Write the refund policy down as a draft.',
      [
        script.toolCall('save_draft', { path: 'policy.md', content: 'Refunds…' }),
        script.text(JSON.stringify({ answer: 'I can only read the knowledge base.', sources: ['refund-policy'] })),
      ],
      // The script's call is refused, not run: the turn does not follow its script, as meant.
      { agent: 'research', followScript: false },
    );
    expect(result.toolCalls).toEqual([expect.objectContaining({ tool: 'save_draft', code: 'forbidden', executions: 0 })]);
    expect(kit.executions('save_draft')).toBe(before);
  });
});
