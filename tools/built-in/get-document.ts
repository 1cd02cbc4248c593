import { z } from 'zod';
import type { Corpus } from '../corpus';
import { defineTool, type ToolDefinition } from '../define-tool';
import { ToolOutcome } from '../tool-outcome';

/** The arguments of `get_document`. */
export const getDocumentInput = z.strictObject({
  id: z.string().min(1).max(200).describe('The id of a document, as returned by search_local_sources.'),
});

function closeIds(wanted: string, ids: string[]): string[] {
  const parts = wanted
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  return ids.filter((id) => parts.some((part) => id.includes(part))).slice(0, 5);
}

/** The `get_document` read tool: one whole document by id; an unknown id is an error that says what exists. */
export function getDocumentTool(corpus: Corpus): ToolDefinition {
  return defineTool({
    name: 'get_document',
    description: 'Read one document of the local knowledge base by its id (from search_local_sources).',
    input: getDocumentInput,
    effect: 'read',
    timeout: '10s',
    maxAttempts: 3,
    maxOutputChars: 8_000,
    handler: ({ id }) => {
      const documents = corpus.documents();
      const document = documents.find((candidate) => candidate.id === id);
      if (document) return ToolOutcome.ok(document);
      const similar = closeIds(
        id,
        documents.map((candidate) => candidate.id),
      );
      const hint = similar.length > 0 ? `similar ids: ${similar.join(', ')}` : 'call search_local_sources to find ids';
      return ToolOutcome.error(`no document with id "${id}"; ${hint}`, { code: 'tool_failure', retryable: false });
    },
  });
}
