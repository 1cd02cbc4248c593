import { z } from 'zod';
import { defineTool, type StatusAnswer, type ToolDefinition } from '../define-tool';
import { ToolError } from '../tool-error';
import { ToolOutcome } from '../tool-outcome';
import { createFile, reachFolder, readBounded, taskFolderName } from './workspace-path';

/** The arguments of `send_message`. */
export const sendMessageInput = z.strictObject({
  to: z.string().min(1).max(200).describe('The recipient: an address or a team name.'),
  subject: z.string().min(1).max(200).describe('A one-line subject.'),
  body: z.string().min(1).max(50_000).describe('The message text.'),
});

/** Most bytes read back from a message already delivered (a body of 50,000 characters, each escaped, fits). */
const MAX_MESSAGE_BYTES = 1 << 20;

/**
 * The `send_message` irreversible write: delivers into the task's own folder of the workspace
 * outbox (`outbox/<task>/`), one file per message named by its idempotency key and created
 * exclusively through the workspace guard, so one intent can never leave two files. Its status
 * check reads that file: after a cut-off, a message found there was delivered, one not there was not.
 */
export function sendMessageTool({ workspace }: { workspace: string }): ToolDefinition {
  return defineTool({
    name: 'send_message',
    description: 'Send a message to a person or team. It cannot be taken back, so a human approves each one before it goes out.',
    input: sendMessageInput,
    effect: 'irreversible_write',
    timeout: '10s',
    maxAttempts: 1,
    maxOutputChars: 1_000,
    approvalTimeout: '24h',
    summary: ({ to, subject }) => `to ${to}: ${subject}`,
    status: async (_args, { taskId, idempotencyKey }): Promise<StatusAnswer> => {
      const folder = reachFolder(workspace, ['outbox', taskFolderName(taskId)], { create: false });
      const name = `${idempotencyKey}.json`;
      const existing = folder && (await readBounded(folder, name, MAX_MESSAGE_BYTES));
      if (!folder || !existing) return 'not_applied';
      if (existing.truncated) return 'unknown';
      let delivered: { sentAt?: unknown };
      try {
        delivered = JSON.parse(existing.data.toString('utf8'));
      } catch {
        return 'unknown';
      }
      return { state: 'applied', data: { delivered: `${folder.relative}/${name}`, sentAt: delivered.sentAt, alreadyDelivered: true } };
    },
    handler: async ({ to, subject, body }, { idempotencyKey, taskId }) => {
      if (!idempotencyKey) throw new Error('send_message needs an idempotency key');
      const folder = reachFolder(workspace, ['outbox', taskFolderName(taskId)], { create: true })!;
      const name = `${idempotencyKey}.json`;
      const message = { idempotencyKey, taskId, to, subject, body, sentAt: new Date().toISOString() };
      if (await createFile(folder, name, `${JSON.stringify(message, null, 2)}\n`)) {
        return ToolOutcome.ok({ delivered: `${folder.relative}/${name}`, sentAt: message.sentAt });
      }
      const existing = await readBounded(folder, name, MAX_MESSAGE_BYTES);
      if (!existing || existing.truncated) {
        throw new ToolError(`${folder.relative}/${name} exists but cannot be read back as a delivered message`, 'tool_failure');
      }
      const delivered = JSON.parse(existing.data.toString('utf8'));
      return ToolOutcome.ok({ delivered: `${folder.relative}/${name}`, sentAt: delivered.sentAt, alreadyDelivered: true });
    },
  });
}
