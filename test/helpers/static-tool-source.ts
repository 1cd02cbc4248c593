import { z } from 'zod';
import { defineTool } from '../../tools/define-tool';
import type { ToolSource } from '../../tools/tool-source';

/** The section a static source reads: a prefix for what its tool answers (`notes.prefix`). */
const notesSection = {
  key: 'notes',
  schema: z.strictObject({ prefix: z.string().default('note: ') }),
} as const;

/** What a static source has seen: each open and close in order, and the answers its tool gave. */
export interface SourceRecord {
  events: string[];
  answers: string[];
}

/**
 * A second tool source, whole in this file: notes held in memory behind one read tool,
 * `<name>__read`. It reads its own config section, records its lifecycle, and fails to open with
 * `failure` when one is given.
 */
export function staticNotesSource(
  name: string,
  notes: Record<string, string>,
  { failure }: { failure?: Error } = {},
): { source: ToolSource<z.output<typeof notesSection.schema>>; record: SourceRecord } {
  const record: SourceRecord = { events: [], answers: [] };
  const source: ToolSource<z.output<typeof notesSection.schema>> = {
    name,
    section: notesSection,
    async open({ section }) {
      if (failure) throw failure;
      record.events.push(`open ${name}`);
      const read = defineTool({
        name: `${name}__read`,
        description: 'Reads one note by its id.',
        input: z.object({ id: z.string().describe('the note id') }),
        effect: 'read',
        handler: ({ id }) => {
          const answer = `${section.prefix}${notes[id] ?? 'no such note'}`;
          record.answers.push(answer);
          return answer;
        },
      });
      return {
        tools: [read],
        close: async () => void record.events.push(`close ${name}`),
      };
    },
  };
  return { source, record };
}
