import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  makeContinueAsNewFunc,
  executeChild,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { Mutex } from 'async-mutex';
import type { Activities } from '../common/activity-types';
import { FAILURE_TYPE } from '../common/failures';
import type { ConversationInput, ConversationState, TokenLedger, TurnMessage } from '../common/contract/conversation';
import type { AgentTurnResult } from '../common/contract/turn';
import { unencryptedMode } from '../common/unencrypted';
import { agentTurn } from './agent-turn';
import { closeConversationSignal, historyQuery, raiseTokenBudgetUpdate, sendUpdate } from './messages';
import { CONVERSATION_BOUNDS, CONVERSATION_DEFAULTS, MAX_SEND_TEXT_CHARS } from '../common/defaults';
import { cutMessage, fitHistory, jsonBytes, leftOutMarker } from './conversation-history';
import { decodedOrRefused, decodedValue, rawQuery, rawSignal, rawUpdate } from './message-payload';

/** Bytes of a carried input kept free for the fields beside the history (turn count, token ledger, omitted count). */
const CARRIED_FIELDS_BYTES = 1_024;

const { turnSettings } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  summary: 'conversation settings',
  retry: { maximumAttempts: 5 },
});

/** The tokens left in a ledger's budget (none when it has no budget). */
export function tokensLeft(ledger: TokenLedger): number | undefined {
  return ledger.budget === undefined ? undefined : ledger.budget - ledger.used.inputTokens - ledger.used.outputTokens;
}

/** A copy of a ledger (the workflow sandbox has no structuredClone). */
function copyLedger(ledger: TokenLedger): TokenLedger {
  return { used: { ...ledger.used }, ...(ledger.budget === undefined ? {} : { budget: ledger.budget }) };
}

/** Why a conversation cannot run another turn on its budget, or undefined when it can. */
function budgetSpent(ledger: TokenLedger): string | undefined {
  const left = tokensLeft(ledger);
  if (left === undefined || left > 0) return undefined;
  const used = ledger.used.inputTokens + ledger.used.outputTokens;
  return `the conversation's token budget is spent (${used} of ${ledger.budget} tokens used); raise it with the raiseTokenBudget update`;
}

/** Why a raise of the budget to `maxTokens` is refused, or undefined when it is taken. */
function refusedRaise(ledger: TokenLedger, maxTokens: unknown): string | undefined {
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1)
    return 'raiseTokenBudget: maxTokens must be a whole number of at least 1';
  if (ledger.budget === undefined) return 'raiseTokenBudget: the conversation has no token budget to raise';
  if (maxTokens <= ledger.budget) return `raiseTokenBudget: maxTokens ${maxTokens} is not above the budget in force (${ledger.budget})`;
  return undefined;
}

/**
 * The earlier messages a turn gets: the newest ones that fit the budget (characters of their JSON,
 * and at most `budgetBytes` UTF-8 bytes of it), whole user/answer pairs, oldest dropped first. Tool
 * outputs of earlier turns are never carried (they stay in those turns' own histories), so only the
 * questions and final answers compete for the budget.
 */
export function boundedHistory(history: TurnMessage[], budgetChars: number, budgetBytes = Number.POSITIVE_INFINITY): TurnMessage[] {
  const kept: TurnMessage[] = [];
  let used = 0;
  let usedBytes = 2;
  for (let index = history.length - 2; index >= 0; index -= 2) {
    const pair = history.slice(index, index + 2);
    const size = JSON.stringify(pair).length;
    const bytes = jsonBytes(pair) - 1;
    if (used + size > budgetChars || usedBytes + bytes > budgetBytes) break;
    kept.unshift(...pair);
    used += size;
    usedBytes += bytes;
  }
  return kept;
}

/** Fails a conversation's start: its input is not one it can run. */
function invalidInput(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FAILURE_TYPE.invalid_input, message: `conversation input: ${message}`, nonRetryable: true });
}

/**
 * A conversation: it keeps the message history, runs one child `agentTurn` for each user message
 * (update `send`, answered with the turn's result; concurrent sends run one at a time, in the order
 * they were accepted), and continues as new when Temporal suggests it (or after `maxTurnsPerRun`
 * turns), carrying its history into the new run. The history stays within CONVERSATION_BOUNDS by
 * construction: each message cut to its bound, the oldest dropped and counted (`omittedMessages`),
 * so no carried input or turn input can reach Temporal's payload limit.
 */
export async function conversation(input: ConversationInput): Promise<ConversationState> {
  if (!input || typeof input.conversationId !== 'string' || input.conversationId.trim() === '') {
    throw ApplicationFailure.create({
      type: FAILURE_TYPE.invalid_input,
      message: 'conversation input: conversationId must be a non-empty string',
      nonRetryable: true,
    });
  }
  if (unencryptedMode(input) === 'all') {
    const message = 'conversation input: it arrived unencrypted; encryption.requireEncrypted is "all"';
    throw ApplicationFailure.create({ type: FAILURE_TYPE.invalid_input, message, nonRetryable: true });
  }
  const { maxTokens } = input;
  if (maxTokens !== undefined && (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1)) {
    const message = 'conversation input: maxTokens must be a whole number of at least 1';
    throw ApplicationFailure.create({ type: FAILURE_TYPE.invalid_input, message, nonRetryable: true });
  }
  const {
    conversationId,
    model,
    tools,
    limits,
    agent,
    maxTurnsPerRun = CONVERSATION_DEFAULTS.maxTurnsPerRun,
    contextBudgetChars = CONVERSATION_DEFAULTS.contextBudgetChars,
  } = input;
  if (input.history !== undefined && !Array.isArray(input.history)) throw invalidInput('history must be a list of messages');
  const { omittedMessages: omittedBefore = 0 } = input;
  if (!Number.isInteger(omittedBefore) || omittedBefore < 0) throw invalidInput('omittedMessages must be a whole number of at least 0');
  // What the conversation carries besides its state must leave room for the history in every input it builds.
  const settings = { ...input, history: undefined, turns: undefined, tokens: undefined, omittedMessages: undefined };
  const settingsBytes = jsonBytes(settings);
  if (settingsBytes > CONVERSATION_BOUNDS.settingsBytes) {
    throw invalidInput(
      `its settings (everything but history, turns, tokens and omittedMessages) take ${settingsBytes} bytes of JSON; at most ${CONVERSATION_BOUNDS.settingsBytes} are taken`,
    );
  }
  // The carried history's share of the continue-as-new input, which so stays within CONVERSATION_BOUNDS.inputBytes.
  const historyBudgetBytes = CONVERSATION_BOUNDS.inputBytes - settingsBytes - CARRIED_FIELDS_BYTES;
  // The ledger: carried from the run before, or started here with the input's budget. When neither the
  // input nor an earlier run set a budget, config's is read once below, before any turn runs.
  const tokens = input.tokens
    ? copyLedger(input.tokens)
    : { used: { inputTokens: 0, outputTokens: 0 }, ...(input.maxTokens === undefined ? {} : { budget: input.maxTokens }) };
  const state: ConversationState = { conversationId, turns: input.turns ?? 0, history: [], closed: false, tokens };
  // Keeps the history within its budget: each message cut to its bound, the oldest dropped and counted.
  const keepWithinBounds = (history: TurnMessage[]) => {
    const fitted = fitHistory({ history, budgetBytes: historyBudgetBytes, messageBytes: CONVERSATION_BOUNDS.messageBytes });
    state.history = fitted.history;
    const omitted = (state.omittedMessages ?? 0) + fitted.dropped;
    if (omitted > 0) state.omittedMessages = omitted;
  };
  if (omittedBefore > 0) state.omittedMessages = omittedBefore;
  keepWithinBounds(input.history ?? []);
  let turnsThisRun = 0;
  let budgetKnown = input.tokens !== undefined || input.maxTokens !== undefined;

  // One turn for one message; sends hold the conversation's mutex (below), so turns run one at a time.
  const runTurn = async (text: string): Promise<AgentTurnResult> => {
    await condition(() => budgetKnown);
    // A turn that ran while this send waited may have spent the rest of the budget.
    const spent = budgetSpent(tokens);
    if (spent)
      throw ApplicationFailure.create({ type: FAILURE_TYPE.token_budget_exhausted, message: `send: ${spent}`, nonRetryable: true });
    const left = tokensLeft(tokens);
    const turn = ++state.turns;
    turnsThisRun++;
    const turnInput = {
      taskId: conversationId,
      prompt: text,
      model,
      tools,
      limits,
      // Each turn names the agent itself: a name its worker does not declare fails that turn (invalid_input).
      ...(agent === undefined ? {} : { agent }),
      ...(left === undefined ? {} : { tokenAllowance: left }),
    };
    // The turn's input stays within CONVERSATION_BOUNDS.inputBytes too, and the model is told how many earlier messages it is not given.
    const marker = leftOutMarker(state.history.length + (state.omittedMessages ?? 0));
    const roomBytes = CONVERSATION_BOUNDS.inputBytes - jsonBytes(turnInput) - jsonBytes(marker) - CARRIED_FIELDS_BYTES;
    const given = boundedHistory(state.history, contextBudgetChars, roomBytes);
    const leftOut = (state.omittedMessages ?? 0) + state.history.length - given.length;
    const result = await executeChild(agentTurn, {
      workflowId: `${workflowInfo().workflowId}-turn-${turn}`,
      args: [{ ...turnInput, history: leftOut > 0 ? [leftOutMarker(leftOut), ...given] : given }],
    });
    tokens.used.inputTokens += result.usage.inputTokens;
    tokens.used.outputTokens += result.usage.outputTokens;
    const answer: TurnMessage = {
      role: 'assistant',
      text: result.answer ?? `(the turn ended with status ${result.status})`,
      toolCalls: [],
    };
    keepWithinBounds([
      ...state.history,
      cutMessage({ role: 'user', content: text }, CONVERSATION_BOUNDS.messageBytes),
      cutMessage(answer, CONVERSATION_BOUNDS.messageBytes),
    ]);
    return result;
  };
  // First in, first out: the send accepted first runs its turn first, and each turn sees the answers of all before it.
  const sendLock = new Mutex();

  // Every handler takes its payloads raw and decodes them itself (decodeMessage): no payload can fail a workflow task.
  setHandler(rawQuery<ConversationState>(historyQuery.name), () => state);
  setHandler(rawSignal(closeConversationSignal.name), () => {
    state.closed = true;
  });
  setHandler(
    rawUpdate<AgentTurnResult>(sendUpdate.name),
    (raw): Promise<AgentTurnResult> => {
      const { text } = decodedValue(raw) as { text: string };
      return sendLock.runExclusive(() => runTurn(text));
    },
    {
      validator: (raw) => {
        const message = decodedOrRefused(raw, 'send') as { text?: unknown } | null;
        if (!message || typeof message !== 'object' || typeof message.text !== 'string' || message.text.trim() === '')
          throw new Error('send: text must be a non-empty string');
        if (message.text.length > MAX_SEND_TEXT_CHARS) {
          throw new Error(`send: text is ${message.text.length} characters long; at most ${MAX_SEND_TEXT_CHARS} are taken`);
        }
        if (unencryptedMode(message) === 'all') {
          throw new Error('send: the message arrived unencrypted; encryption.requireEncrypted is "all"');
        }
        if (state.closed) throw new Error('send: the conversation is closed');
        const spent = budgetSpent(tokens);
        if (spent) throw new Error(`send: ${spent}`);
      },
    },
  );
  setHandler(
    rawUpdate<TokenLedger>(raiseTokenBudgetUpdate.name),
    async (raw): Promise<TokenLedger> => {
      const { maxTokens } = decodedValue(raw) as { maxTokens: number };
      await condition(() => budgetKnown);
      const refused = refusedRaise(tokens, maxTokens);
      if (refused) throw ApplicationFailure.create({ type: FAILURE_TYPE.invalid_input, message: refused, nonRetryable: true });
      tokens.budget = maxTokens;
      return copyLedger(tokens);
    },
    {
      validator: (raw) => {
        const raise = decodedOrRefused(raw, 'raiseTokenBudget') as { maxTokens?: unknown } | null;
        if (!raise || typeof raise !== 'object') throw new Error('raiseTokenBudget: expected { maxTokens }');
        const refused = budgetKnown ? refusedRaise(tokens, raise.maxTokens) : undefined;
        if (refused) throw new Error(refused);
      },
    },
  );
  if (!budgetKnown) {
    const { conversationMaxTokens } = await turnSettings();
    if (conversationMaxTokens !== undefined) tokens.budget = conversationMaxTokens;
    budgetKnown = true;
  }

  const idle = () => !sendLock.isLocked();
  // A newer build made current moves the conversation at its next boundary: it continues as new,
  // between two turns, and the next run starts on that build (pinned to it in turn).
  const runIsDone = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || turnsThisRun >= maxTurnsPerRun || info.targetWorkerDeploymentVersionChanged;
  };
  await condition(() => state.closed || (idle() && runIsDone()));
  await condition(allHandlersFinished);
  if (state.closed) return state;
  const carried = { tokens, ...(state.omittedMessages ? { omittedMessages: state.omittedMessages } : {}) };
  // The next run starts on the build the task queue targets now: the same one unless a newer build was made current.
  const nextRun = makeContinueAsNewFunc<typeof conversation>({ initialVersioningBehavior: 'AUTO_UPGRADE' });
  return nextRun({ ...input, history: state.history, turns: state.turns, ...carried });
}
