import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../define-tool';
import { ToolOutcome } from '../tool-outcome';

/** The arguments of `send_message`. */
export const sendMessageInput = z.strictObject({
  to: z.string().min(1).max(200).describe('The recipient: an address or a team name.'),
  subject: z.string().min(1).max(200).describe('A one-line subject.'),
  body: z.string().min(1).max(50_000).describe('The message text.'),
});

/**
 * The `send_message` irreversible write: delivers into the workspace outbox, one file per message
 * named by its idempotency key and created exclusively, so one intent can never leave two files.
 */
export function sendMessageTool({ workspace }: { workspace: string }): ToolDefinition {
  const outbox = path.join(workspace, 'outbox');
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
    handler: ({ to, subject, body }, { idempotencyKey, taskId }) => {
      if (!idempotencyKey) throw new Error('send_message needs an idempotency key');
      mkdirSync(outbox, { recursive: true });
      const file = path.join(outbox, `${idempotencyKey}.json`);
      const message = { idempotencyKey, taskId, to, subject, body, sentAt: new Date().toISOString() };
      try {
        writeFileSync(file, `${JSON.stringify(message, null, 2)}\n`, { flag: 'wx' });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const delivered = JSON.parse(readFileSync(file, 'utf8'));
        return ToolOutcome.ok({ delivered: `outbox/${path.basename(file)}`, sentAt: delivered.sentAt, alreadyDelivered: true });
      }
      return ToolOutcome.ok({ delivered: `outbox/${path.basename(file)}`, sentAt: message.sentAt });
    },
  });
}
