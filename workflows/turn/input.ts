import { ApplicationFailure } from '@temporalio/workflow';
import type { AgentTurnInput } from '../../common/contract/turn';
import { FAILURE_TYPE } from '../../common/failures';
import { CONVERSATION_BOUNDS, TURN_LIMIT_NAMES } from '../../common/defaults';
import { unencryptedMode } from '../../common/unencrypted';
import { jsonBytes } from '../conversation-history';
import { lineageProblem } from '../delegation/lineage';

function invalidInput(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FAILURE_TYPE.invalid_input, message: `agentTurn input: ${message}`, nonRetryable: true });
}

function isWholeNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** The input checks of a turn: a malformed input fails the workflow at once with `invalid_input` (the caller's mistake). */
export function checkInput(input: unknown): asserts input is AgentTurnInput {
  if (!input || typeof input !== 'object') throw invalidInput('expected an object { taskId, prompt, model?, tools?, limits? }');
  if (unencryptedMode(input) === 'all') throw invalidInput('the input arrived unencrypted; encryption.requireEncrypted is "all"');
  const { taskId, prompt, tools, limits, history, tokenAllowance, agent, lineage } = input as Record<string, unknown>;
  const misplaced = lineage === undefined ? undefined : lineageProblem(lineage);
  if (misplaced) throw invalidInput(misplaced);
  if (history !== undefined && !Array.isArray(history)) throw invalidInput('history must be a list of messages');
  // A history is carried into every model step's input: past this bound the steps would pass Temporal's payload limit.
  const historyBytes = history === undefined ? 0 : jsonBytes(history);
  if (historyBytes > CONVERSATION_BOUNDS.inputBytes) {
    throw invalidInput(`history is ${historyBytes} bytes of JSON; at most ${CONVERSATION_BOUNDS.inputBytes} are taken`);
  }
  if (typeof taskId !== 'string' || taskId.trim() === '') throw invalidInput('taskId must be a non-empty string');
  if (typeof prompt !== 'string' || prompt.trim() === '') throw invalidInput('prompt must be a non-empty string');
  if (tools !== undefined && (!Array.isArray(tools) || tools.some((tool) => typeof tool !== 'string'))) {
    throw invalidInput('tools must be a list of tool names');
  }
  if (limits !== undefined) {
    if (!limits || typeof limits !== 'object') throw invalidInput('limits must be an object');
    for (const [key, value] of Object.entries(limits)) {
      if (!TURN_LIMIT_NAMES.includes(key)) throw invalidInput(`limits.${key} is not a limit (${TURN_LIMIT_NAMES.join(', ')})`);
      if (!isWholeNumber(value)) throw invalidInput(`limits.${key} must be a whole number`);
    }
  }
  if (tokenAllowance !== undefined && !isWholeNumber(tokenAllowance)) throw invalidInput('tokenAllowance must be a whole number');
  // Whether the worker declares the agent is asked with the turn's settings; here only its form.
  if (agent !== undefined && (typeof agent !== 'string' || !/^[a-z][a-z0-9_-]{0,63}$/.test(agent))) {
    throw invalidInput(
      `agent must be the name of an agent (lowercase letters, digits, _ and -), got ${JSON.stringify(agent)?.slice(0, 80)}`,
    );
  }
}
