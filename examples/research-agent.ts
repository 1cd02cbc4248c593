// A research agent over the corpus built only through the public API (in your project: import
// from 'tollgate'): it may only search and read the local knowledge base, and it answers with the
// documents it used. examples/research-agent.test.ts runs it.
import { z } from 'zod';
import { builtInTools, createWorker, defineAgent, loadConfig, TollgateClient, type AgentOutput, type TollgateConfig } from '../index';

/** The two read tools of the built-in set: search the corpus, read a document of it. */
export const RESEARCH_TOOLS = ['search_local_sources', 'get_document'];

/** The built-in tools over the config's corpus that the research agent uses. */
export function researchTools(config: TollgateConfig) {
  return builtInTools(config).filter((tool) => RESEARCH_TOOLS.includes(tool.name));
}

/** The agent: tools by name (the worker serves them), a typed answer that names its sources. */
export const research = defineAgent({
  name: 'research',
  description: 'Answers questions from the local knowledge base, citing the documents it read.',
  instructions: [
    'You answer questions about the company from its knowledge base only.',
    'Search first, read the documents that match, and cite the id of every document you used.',
    'When the knowledge base does not say, answer that it does not.',
  ].join('\n'),
  modelSettings: { temperature: 0 },
  tools: RESEARCH_TOOLS,
  limits: { maxSteps: 6, maxToolCalls: 10 },
  output: z.object({
    answer: z.string(),
    sources: z.array(z.string()).min(1).describe('The ids of the documents the answer comes from.'),
  }),
});

/** The typed answer of a research turn. */
export type ResearchOutput = AgentOutput<typeof research>;

/** Runs a worker serving the agent, and one question to it on the config's default model. */
export async function main(config = loadConfig(), question = 'How long do customers have to ask for a refund of an annual plan?') {
  const worker = await createWorker({ config, tools: researchTools(config), agents: [research] });
  const client = await TollgateClient.connect(config);
  try {
    return await worker.runUntil(async () => {
      const { workflowId } = await client.startTurn({ taskId: 'research-refunds', prompt: question, agent: 'research' });
      return client.result<ResearchOutput>(workflowId);
    });
  } finally {
    await client.close();
  }
}

if (require.main === module) {
  main().then((result) => console.log(result.status, result.output));
}
