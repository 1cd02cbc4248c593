// The peer benchmark's tools without a boundary: the project's own handlers for search_local_sources,
// get_document and save_draft, called directly. The bare agent loop (bench/bare-workflows.ts) and the
// @temporalio/ai-sdk variant (bench/peer-workflows.ts) run these as plain activities; Tollgate runs the
// same handlers through its boundary. Each returns what the model sees, in the shape Tollgate gives it.
import path from 'node:path';
import { getDocumentTool } from '../tools/built-in/get-document';
import { saveDraftTool } from '../tools/built-in/save-draft';
import { searchLocalSourcesTool } from '../tools/built-in/search-local-sources';
import { openCorpus } from '../tools/search/corpus';
import type { ToolDefinition } from '../tools/define-tool';
import { ToolOutcome } from '../tools/tool-outcome';

/** A tool result as the model reads it. */
export type PlanToolResult = { status: 'success'; data: unknown } | { status: 'error'; code: string; message: string };

/** The arguments of the plan's three tools. */
export type SearchArgs = { query: string; mode?: 'words' | 'regex'; limit?: number };
export type GetDocumentArgs = { id: string };
export type SaveDraftArgs = { taskId: string; path: string; content: string };

async function run(definition: ToolDefinition, args: unknown, taskId: string, idempotencyKey?: string): Promise<PlanToolResult> {
  const output = await definition.handler(definition.input.parse(args), {
    taskId,
    callId: 'plan',
    attempt: 1,
    signal: new AbortController().signal,
    idempotencyKey,
  });
  if (!ToolOutcome.is(output)) return { status: 'success', data: output };
  return output.ok ? { status: 'success', data: output.data } : { status: 'error', code: output.code, message: output.message };
}

/** The three tool definitions over a corpus folder and a workspace folder. */
export function planToolDefinitions({ corpus, workspace }: { corpus: string; workspace: string }) {
  const sources = openCorpus(path.resolve(corpus));
  return {
    search: searchLocalSourcesTool(sources),
    read: getDocumentTool(sources),
    save: saveDraftTool({ workspace: path.resolve(workspace) }),
  };
}

/** The three tools as plain activities (no checks, no records, no approvals). */
export function planToolActivities(folders: { corpus: string; workspace: string }) {
  const { search, read, save } = planToolDefinitions(folders);
  return {
    planSearch: async (args: SearchArgs) => run(search, args, 'plan'),
    planGetDocument: async (args: GetDocumentArgs) => run(read, args, 'plan'),
    planSaveDraft: async ({ taskId, ...args }: SaveDraftArgs) => run(save, args, taskId, `${taskId}.save_draft`),
  };
}

export type PlanToolActivities = ReturnType<typeof planToolActivities>;
