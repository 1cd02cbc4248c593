import { ApplicationFailure } from '@temporalio/activity';
import { z } from 'zod';
import type { ModelSelection, ModelStepInput, ModelStepResult, ScriptStep, TurnMessage } from '../common/types';
import type { TollgateConfig } from '../config/config-schema';
import { checkToolCall } from './check-tool-call';
import { playScriptedModel } from './scripted-model';
import type { ToolRegistry } from './tool-registry';

const scriptSchema = z.array(
  z.union([
    z.strictObject({ toolCalls: z.array(z.strictObject({ tool: z.string(), args: z.unknown() })), text: z.string().optional() }),
    z.strictObject({ text: z.string() }),
  ]),
);

/** The input's model is neither a configured name nor a valid scripted model; retrying cannot help. */
function invalidModel(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'invalid_model', message, nonRetryable: true });
}

function resolveScript(model: ModelSelection | undefined, config: TollgateConfig): ScriptStep[] | undefined {
  const selection = model ?? config.model.default;
  if (typeof selection === 'string') {
    const entry = config.model.models[selection];
    if (!entry) throw invalidModel(`model "${selection}" is not in the config's model list (${Object.keys(config.model.models).join(', ')})`);
    return undefined;
  }
  if (selection?.provider !== 'scripted') throw invalidModel(`model must be a configured name or { provider: 'scripted', script? }`);
  if (selection.script === undefined) return undefined;
  const parsed = scriptSchema.safeParse(selection.script);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidModel(`model.script.${issue.path.map(String).join('.')}: ${issue.message}`);
  }
  return parsed.data;
}

function countWords(value: unknown): number {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? '');
  return text.split(/\s+/).filter(Boolean).length;
}

/**
 * The `modelStep` activity: asks the model for its next step and passes each tool call it wants
 * through the boundary's checks (known tool, allowed for the task, valid arguments), so the workflow
 * only ever schedules calls that may run.
 */
export function createModelStep({ registry, config }: { registry: ToolRegistry; config: TollgateConfig }) {
  return async function modelStep(input: ModelStepInput): Promise<ModelStepResult> {
    const script = resolveScript(input.model, config);
    const prompt = input.messages.find((message): message is Extract<TurnMessage, { role: 'user' }> => message.role === 'user')?.content ?? '';
    const availableTools = registry
      .list()
      .map((tool) => tool.name)
      .filter((name) => !input.allowedTools || input.allowedTools.includes(name));
    const reply = playScriptedModel({ taskId: input.taskId, prompt, messages: input.messages, script, availableTools });
    const toolCalls = reply.toolCalls.map((call, index) =>
      checkToolCall({ registry, request: { callId: `call-${input.step}-${index}`, tool: call.tool, args: call.args }, allowedTools: input.allowedTools }),
    );
    return {
      text: reply.text,
      toolCalls,
      // The scripted model counts words as tokens; real providers report their own counts.
      usage: { inputTokens: countWords(input.messages), outputTokens: countWords(reply) },
    };
  };
}
