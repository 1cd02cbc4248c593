// The restart and deploy tests' tree (test/e2e/delegation-restart.test.ts, test/e2e/delegation-deploy.test.ts),
// the same in a worker process and in the test's own: a lead agent whose tools are two subagents on
// scripted models built in code (refunds: one irreversible refund; researcher: one lookup), and
// tools whose handler executions are appended to a log file, so that every process counts in one place.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { ScriptedLanguageModel } from '../../activities/models/scripted-language-model';
import { defineAgent, type AgentDefinition } from '../../agents/define-agent';
import type { ModelSelection } from '../../common/contract/turn';
import { defineTool, type ToolDefinition } from '../../tools/define-tool';

/** One handler execution as the log records it. */
export interface LoggedExecution {
  tool: string;
  orderId: string;
  idempotencyKey?: string;
  pid: number;
}

/** The tree's tools, agents and models; each execution of a handler is appended to `executionLog`. */
export function treeParts(executionLog: string): {
  tools: ToolDefinition[];
  agents: AgentDefinition<unknown>[];
  models: Record<string, ScriptedLanguageModel>;
} {
  const log = (tool: string, orderId: string, idempotencyKey?: string) =>
    appendFileSync(executionLog, `${JSON.stringify({ tool, orderId, idempotencyKey, pid: process.pid } satisfies LoggedExecution)}\n`);
  const refundOrder = defineTool({
    name: 'refund_order',
    description: 'Refunds an order.',
    input: z.strictObject({ orderId: z.string(), cents: z.number().int().positive() }),
    effect: 'irreversible_write',
    handler: ({ orderId, cents }, { idempotencyKey }) => {
      log('refund_order', orderId, idempotencyKey);
      return { refundedCents: cents };
    },
  });
  const lookupOrder = defineTool({
    name: 'lookup_order',
    description: 'Looks an order up.',
    input: z.strictObject({ orderId: z.string() }),
    effect: 'read',
    handler: ({ orderId }) => {
      log('lookup_order', orderId);
      return { orderId, state: 'delivered' };
    },
  });
  const refunds = defineAgent({
    name: 'refunds',
    description: 'Refunds orders.',
    instructions: 'Refund what you are asked to refund.',
    model: 'refunds-script',
    tools: [refundOrder],
  });
  const researcher = defineAgent({
    name: 'researcher',
    description: 'Finds the facts about an order.',
    instructions: 'Look the order up.',
    model: 'researcher-script',
    tools: [lookupOrder],
  });
  const lead = defineAgent({
    name: 'lead',
    description: 'Answers, asking its subagents.',
    instructions: 'Ask.',
    tools: [refunds, researcher],
  });
  return {
    tools: [refundOrder, lookupOrder],
    agents: [refunds, researcher, lead],
    models: {
      'refunds-script': new ScriptedLanguageModel([
        { toolCalls: [{ tool: 'refund_order', args: { orderId: 'o-1', cents: 500 } }] },
        { text: 'Refunded 500 cents.' },
      ]),
      'researcher-script': new ScriptedLanguageModel([
        { toolCalls: [{ tool: 'lookup_order', args: { orderId: 'o-1' } }] },
        { text: 'Order o-1 was delivered.' },
      ]),
    },
  };
}

/** The lead's model: a delegate call to each agent named, one step each, then the answer. */
export function leadModel(...subagents: Array<'refunds' | 'researcher'>): ModelSelection {
  return {
    provider: 'scripted',
    script: [
      ...subagents.map((agent) => ({ toolCalls: [{ tool: agent, args: { request: `Please, ${agent}: order o-1.` } }] })),
      { text: 'done' },
    ],
  };
}

/** The executions the log holds, of one tool when named. */
export function executionsIn(executionLog: string, tool?: string): LoggedExecution[] {
  if (!existsSync(executionLog)) return [];
  const all = readFileSync(executionLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LoggedExecution);
  return tool ? all.filter((entry) => entry.tool === tool) : all;
}
