import { z } from 'zod';
import { sha256 } from '../canonical-json';
import { defineTool, type ToolDefinition } from '../define-tool';
import { taskSlug } from '../intent-key';
import { ToolOutcome } from '../tool-outcome';
import { nameSegments, pathRefusal, reachFolder, readBounded, replaceFile, taskFolderName } from './workspace-path';

/** The arguments of `save_draft`. */
export const saveDraftInput = z.strictObject({
  path: z.string().min(1).max(512).describe('Where to save, relative to the drafts folder, e.g. "brief.md".'),
  content: z.string().max(200_000).describe('The whole text of the draft.'),
});

/** The folders from the workspace to a draft of a task, and the draft's file name. */
function draftPlace(taskId: string, relative: string): { segments: string[]; name: string } {
  const parts = nameSegments(relative);
  return { segments: ['drafts', taskFolderName(taskId), ...parts.slice(0, -1)], name: parts[parts.length - 1] };
}

/**
 * The `save_draft` reversible write: a file under the task's own folder of the workspace's drafts
 * folder (`drafts/<task>/<path>`), written atomically through the workspace guard.
 */
export function saveDraftTool({ workspace }: { workspace: string }): ToolDefinition {
  const receipt = (folder: string, name: string, content: string) => ({
    path: `${folder}/${name}`,
    bytes: Buffer.byteLength(content),
    sha256: sha256(content),
  });
  return defineTool({
    name: 'save_draft',
    description:
      'Save a text draft in the workspace drafts folder (creates or replaces the file). Saving the same content again changes nothing.',
    input: saveDraftInput,
    effect: 'reversible_write',
    timeout: '10s',
    maxAttempts: 3,
    maxOutputChars: 1_000,
    // Without a task id only the shared drafts folder can be looked at; the handler checks the task's folder at the moment of use.
    authorize: ({ path: relative }, { taskId }) =>
      pathRefusal(workspace, taskId === undefined ? ['drafts'] : ['drafts', taskFolderName(taskId)], relative),
    summary: ({ path: relative }) => `drafts/${relative}`,
    idempotencyKey: ({ path: relative, content }, { taskId }) =>
      `${taskSlug(taskId)}.save_draft.${sha256(relative).slice(0, 12)}.${sha256(content).slice(0, 20)}`,
    status: async ({ path: relative, content }, { taskId }) => {
      const { segments, name } = draftPlace(taskId, relative);
      const folder = reachFolder(workspace, segments, { create: false });
      if (!folder) return 'not_applied';
      // Read one byte more than the draft holds: a longer file is a different draft, and nothing larger is ever read.
      const current = await readBounded(folder, name, Buffer.byteLength(content) + 1);
      if (!current || current.truncated) return 'not_applied';
      if (!current.data.equals(Buffer.from(content))) return 'not_applied';
      return { state: 'applied', data: receipt(folder.relative, name, content) };
    },
    handler: async ({ path: relative, content }, { idempotencyKey, taskId }) => {
      const { segments, name } = draftPlace(taskId, relative);
      const folder = reachFolder(workspace, segments, { create: true })!;
      await replaceFile(folder, name, content, idempotencyKey ?? String(process.pid));
      return ToolOutcome.ok(receipt(folder.relative, name, content));
    },
  });
}
