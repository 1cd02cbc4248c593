import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { sha256 } from '../canonical-json';
import { ToolError } from '../tool-error';
import { defineTool, type ToolDefinition } from '../define-tool';
import { taskSlug } from '../intent-key';
import { ToolOutcome } from '../tool-outcome';
import { pathRefusal, resolveInside } from './workspace-path';

/** The arguments of `save_draft`. */
export const saveDraftInput = z.strictObject({
  path: z.string().min(1).max(512).describe('Where to save, relative to the drafts folder, e.g. "brief.md".'),
  content: z.string().max(200_000).describe('The whole text of the draft.'),
});

/** The `save_draft` reversible write: a file under the workspace's drafts folder, written atomically. */
export function saveDraftTool({ workspace }: { workspace: string }): ToolDefinition {
  const drafts = path.join(workspace, 'drafts');
  const receipt = (relative: string, content: string) => ({ path: `drafts/${relative}`, bytes: Buffer.byteLength(content), sha256: sha256(content) });
  return defineTool({
    name: 'save_draft',
    description: 'Save a text draft in the workspace drafts folder (creates or replaces the file). Saving the same content again changes nothing.',
    input: saveDraftInput,
    effect: 'reversible_write',
    timeout: '10s',
    maxAttempts: 3,
    maxOutputChars: 1_000,
    authorize: ({ path: relative }) => pathRefusal(drafts, relative),
    summary: ({ path: relative }) => `drafts/${relative}`,
    idempotencyKey: ({ path: relative, content }, { taskId }) => `${taskSlug(taskId)}.save_draft.${sha256(relative).slice(0, 12)}.${sha256(content).slice(0, 20)}`,
    status: ({ path: relative, content }) => {
      let current: string;
      try {
        current = readFileSync(resolveInside(drafts, relative), 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'not_applied';
        throw error;
      }
      return sha256(current) === sha256(content) ? { state: 'applied', data: receipt(relative, content) } : 'not_applied';
    },
    handler: ({ path: relative, content }, { idempotencyKey }) => {
      let target: string;
      try {
        target = resolveInside(drafts, relative);
      } catch (error) {
        throw new ToolError((error as Error).message, 'forbidden');
      }
      mkdirSync(path.dirname(target), { recursive: true });
      const temporary = path.join(path.dirname(target), `.${path.basename(target)}.${idempotencyKey ?? process.pid}.tmp`);
      writeFileSync(temporary, content);
      renameSync(temporary, target);
      return ToolOutcome.ok(receipt(relative, content));
    },
  });
}
