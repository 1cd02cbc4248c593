import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  executeChild,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { Mutex } from 'async-mutex';
import type { AgentTurnResult, ConversationInput, ConversationState, TurnMessage } from '../common/types';
import { unencryptedMode } from '../common/unencrypted';
import { agentTurn } from './agent-turn';
import { closeConversationSignal, historyQuery, sendUpdate } from './messages';
import { CONVERSATION_DEFAULTS, MAX_SEND_TEXT_CHARS } from '../common/defaults';

/**
 * Patch id: each `send` takes the conversation's mutex, so sends made at once run their turns one
 * after another, in the order they were accepted. Runs recorded before it (whose waiting sends could
 * start their turns together) replay without the mutex.
 */
export const SERIAL_SENDS_PATCH = 'conversation-serial-sends';

/**
 * The earlier messages a turn gets: the newest ones that fit the budget, whole user/answer pairs,
 * oldest dropped first. Tool outputs of earlier turns are never carried (they stay in those turns'
 * own histories), so only the questions and final answers compete for the budget.
 */
export function boundedHistory(history: TurnMessage[], budgetChars: number): TurnMessage[] {
  const kept: TurnMessage[] = [];
  let used = 0;
  for (let index = history.length - 2; index >= 0; index -= 2) {
    const pair = history.slice(index, index + 2);
    const size = JSON.stringify(pair).length;
    if (used + size > budgetChars) break;
    kept.unshift(...pair);
    used += size;
  }
  return kept;
}

/**
 * A conversation: it keeps the message history, runs one child `agentTurn` for each user message
 * (update `send`, answered with the turn's result; concurrent sends run one at a time, in the order
 * they were accepted), and continues as new when Temporal suggests it
 * (or after `maxTurnsPerRun` turns), carrying the whole history into the new run.
 */
export async function conversation(input: ConversationInput): Promise<ConversationState> {
  if (!input || typeof input.conversationId !== 'string' || input.conversationId.trim() === '') {
    throw ApplicationFailure.create({
      type: 'invalid_input',
      message: 'conversation input: conversationId must be a non-empty string',
      nonRetryable: true,
    });
  }
  if (unencryptedMode(input) === 'all') {
    const message = 'conversation input: it arrived unencrypted; encryption.requireEncrypted is "all"';
    throw ApplicationFailure.create({ type: 'invalid_input', message, nonRetryable: true });
  }
  const {
    conversationId,
    model,
    tools,
    limits,
    maxTurnsPerRun = CONVERSATION_DEFAULTS.maxTurnsPerRun,
    contextBudgetChars = CONVERSATION_DEFAULTS.contextBudgetChars,
  } = input;
  const state: ConversationState = { conversationId, turns: input.turns ?? 0, history: [...(input.history ?? [])], closed: false };
  let turnsThisRun = 0;
  let busy = false;

  // One turn for one message. The busy flag alone does not serialize sends: when it clears, every send
  // waiting on it is unblocked in the same activation. It stays so that a locked send also waits for a
  // turn that a run from before the patch started without the lock.
  const runTurn = async (text: string): Promise<AgentTurnResult> => {
    await condition(() => !busy);
    busy = true;
    try {
      const turn = ++state.turns;
      turnsThisRun++;
      const result = await executeChild(agentTurn, {
        workflowId: `${workflowInfo().workflowId}-turn-${turn}`,
        args: [{ taskId: conversationId, prompt: text, model, tools, limits, history: boundedHistory(state.history, contextBudgetChars) }],
      });
      state.history.push(
        { role: 'user', content: text },
        { role: 'assistant', text: result.answer ?? `(the turn ended with status ${result.status})`, toolCalls: [] },
      );
      return result;
    } finally {
      busy = false;
    }
  };
  // First in, first out: the send accepted first runs its turn first, and each turn sees the answers of all before it.
  const sendLock = new Mutex();

  setHandler(historyQuery, () => state);
  setHandler(closeConversationSignal, () => {
    state.closed = true;
  });
  setHandler(
    sendUpdate,
    ({ text }): Promise<AgentTurnResult> => (patched(SERIAL_SENDS_PATCH) ? sendLock.runExclusive(() => runTurn(text)) : runTurn(text)),
    {
      validator: (message) => {
        if (!message || typeof message.text !== 'string' || message.text.trim() === '')
          throw new Error('send: text must be a non-empty string');
        if (message.text.length > MAX_SEND_TEXT_CHARS) {
          throw new Error(`send: text is ${message.text.length} characters long; at most ${MAX_SEND_TEXT_CHARS} are taken`);
        }
        if (unencryptedMode(message) === 'all') {
          throw new Error('send: the message arrived unencrypted; encryption.requireEncrypted is "all"');
        }
        if (state.closed) throw new Error('send: the conversation is closed');
      },
    },
  );

  const idle = () => !busy && !sendLock.isLocked();
  await condition(() => state.closed || (idle() && (workflowInfo().continueAsNewSuggested || turnsThisRun >= maxTurnsPerRun)));
  await condition(allHandlersFinished);
  if (state.closed) return state;
  return continueAsNew<typeof conversation>({ ...input, history: state.history, turns: state.turns });
}
