import { z } from 'zod';
import { builtInTools, createWorker, defineTool, loadConfig, TollgateClient, ToolOutcome } from '../index';

/** A read tool of your own: how many days remain until a date. */
export const daysUntil = defineTool({
  name: 'days_until',
  description: 'How many days remain until a date.',
  input: z.strictObject({ date: z.iso.date().describe('The date, as YYYY-MM-DD.') }),
  effect: 'read',
  timeout: '2s',
  handler: ({ date }) => ToolOutcome.ok({ days: Math.ceil((Date.parse(date) - Date.now()) / 86_400_000) }),
});

/** Runs a worker that serves the built-in tools and yours, and one turn that calls yours. */
export async function main(config = loadConfig()) {
  const worker = await createWorker({ config, tools: [...builtInTools(config), daysUntil] });
  const client = await TollgateClient.connect(config);
  try {
    return await worker.runUntil(async () => {
      const { workflowId } = await client.startTurn({
        taskId: 'example-days',
        prompt: 'How many days until 2030-01-01?',
        model: {
          provider: 'scripted',
          script: [{ toolCalls: [{ tool: 'days_until', args: { date: '2030-01-01' } }] }, { text: 'Counted.' }],
        },
      });
      return client.result(workflowId);
    });
  } finally {
    await client.close();
  }
}

if (require.main === module) {
  main().then((result) => console.log(result.answer, result.toolCalls));
}
