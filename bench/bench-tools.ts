// The handlers every benchmark runs, once as Tollgate tools and once as bare Temporal activities,
// so that the difference between the variants is the boundary and nothing else.
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../tools/define-tool';
import { ToolOutcome } from '../tools/tool-outcome';

/** The three handlers: a small lookup, a note written to memory, a message appended to an outbox in memory. */
export function benchHandlers() {
  const notes = new Map<string, string>();
  const outbox: string[] = [];
  return {
    notes,
    outbox,
    lookup: (query: string) => `result for ${query}`,
    /** A page of 8,000 characters that differs per page number. */
    page: (page: number) => `Page ${page}: ${'the refund policy, clause by clause, in full. '.repeat(180)}`.slice(0, 8_000),
    putNote: (key: string, text: string) => {
      notes.set(key, text);
      return { key, length: text.length };
    },
    sendNote: (to: string, text: string) => {
      outbox.push(`${to}: ${text}`);
      return { sent: outbox.length };
    },
  };
}

export type BenchHandlers = ReturnType<typeof benchHandlers>;

/** The handlers as Tollgate tools: one per effect level. */
export function benchTools(handlers: BenchHandlers): ToolDefinition[] {
  return [
    defineTool({
      name: 'lookup',
      description: 'Looks something up.',
      input: z.strictObject({ query: z.string().describe('What to look up.') }),
      effect: 'read',
      handler: ({ query }) => ToolOutcome.ok(handlers.lookup(query)),
    }),
    defineTool({
      name: 'put_note',
      description: 'Writes a note under a key; writing the same note again changes nothing.',
      input: z.strictObject({ key: z.string().describe('The note key.'), text: z.string().describe('The note text.') }),
      effect: 'reversible_write',
      handler: ({ key, text }) => ToolOutcome.ok(handlers.putNote(key, text)),
      status: ({ key, text }) =>
        handlers.notes.get(key) === text ? { state: 'applied' as const, data: { key, length: text.length } } : 'not_applied',
    }),
    defineTool({
      name: 'read_page',
      description: 'Reads one page of a long document (8,000 characters).',
      input: z.strictObject({ page: z.number().int().describe('The page number.') }),
      effect: 'read',
      maxOutputChars: 20_000,
      handler: ({ page }) => ToolOutcome.ok(handlers.page(page)),
    }),
    defineTool({
      name: 'send_note',
      description: 'Sends a note to someone; it cannot be taken back.',
      input: z.strictObject({ to: z.string().describe('Who gets it.'), text: z.string().describe('The note text.') }),
      effect: 'irreversible_write',
      handler: ({ to, text }) => ToolOutcome.ok(handlers.sendNote(to, text)),
    }),
  ];
}

/** The same handlers as bare activities, with no boundary around them. */
export function bareActivities(handlers: BenchHandlers) {
  return {
    bareLookup: async (query: string) => handlers.lookup(query),
    barePutNote: async (key: string, text: string) => handlers.putNote(key, text),
    bareSendNote: async (to: string, text: string) => handlers.sendNote(to, text),
    /** A bare agent loop's model step: the scripted plan's next step, without checks. */
    bareModelStep: async (step: number) => ({ step, done: step >= 2 }),
  };
}

export type BareActivities = ReturnType<typeof bareActivities>;
