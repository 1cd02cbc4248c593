// Tollgate's library API: declare tools, run workers, start and decide on turns from your own code.
// Every name here is part of the public contract; internal activity types live in common/activity-types.ts.

// Declaring tools
/** Declares a tool once: schema, description, effect level, timeout, attempts, output limit, handler. */
export {
  defineTool,
  type IdempotencyKeyFunction,
  type IntentContext,
  type SourceDescription,
  type StatusAnswer,
  type StatusCheck,
  type ToolContext,
  type ToolDefinition,
  type ToolSpec,
} from './tools/define-tool';
/** What a handler returns when it wants to say more than "this data": ok, error with a code. */
export { ToolOutcome } from './tools/tool-outcome';
/** A handler's own verdict with a stable code (never retried as a transient failure). */
export { ToolError } from './tools/tool-error';
/** The base of every error Tollgate throws: `X.isInstance(value)` recognises one made by another copy of the package, where `instanceof` fails. */
export { TollgateError } from './common/tollgate-error';
/** The built-in tools of the embedded default (search, documents, drafts, messages, shell), built from a config. */
export { builtInTools } from './tools/built-in';
/** Tools that are not written with `defineTool`: a source opened at worker start, its tools served, closed at shutdown. */
export { ToolSourceError, type OpenToolSource, type ToolSource, type ToolSourceContext, type ToolSourceSection } from './tools/tool-source';
/** MCP servers as a tool source, for `createWorker({ toolSources })`; the config's `mcp` section when given no servers. */
export { mcpToolSource } from './tools/mcp/mcp-tool-source';
/** HTTP APIs described by OpenAPI documents as a tool source, for `createWorker({ toolSources })`; the config's `openapi` section when given none. */
export { openapiToolSource } from './tools/openapi/openapi-tool-source';
/** The tool sources the config's sections open (`mcp`, `openapi`), which `createWorker` uses when given no `toolSources`. */
export { configuredToolSources } from './tools/tool-sources';

// Declaring agents
/** Declares an agent once: instructions, model and settings, tools, limits, typed output, approvals; registered with `createWorker({ agents })`. */
export { defineAgent, type AgentApprovals, type AgentDefinition, type AgentSpec, type InstructionsFunction } from './agents/define-agent';
/** The type of an agent's typed answer (`AgentOutput<typeof support>`), its model settings, and how a result names its agent. */
export type { AgentOutput, AgentReference, ModelSettings } from './common/contract/agent';

// Running workers
/** Builds and runs a worker with the configured tools, models and idempotency store; closes what it opened. */
export { createWorker, TollgateWorker, type CreateWorkerOptions, type WorkflowCodeSource } from './worker/create-worker';
/** Tollgate in a Temporal worker of your own: `Worker.create({ …, plugins: [new TollgatePlugin({ config, tools, agents })] })`. */
export { TollgatePlugin, type TollgatePluginOptions } from './worker/tollgate-plugin';
/** AI SDK language models built in code, by name, as `createWorker({ models })` takes them. */
export type { CodeModels } from './activities/models/language-model';
/** Installs the process's Temporal runtime with its Prometheus exporter; its URL goes to `createWorker({ coreMetricsUrl })`. */
export { installRuntimeMetrics } from './worker/telemetry/runtime-metrics';
/** The workflow interceptor modules a prebuilt bundle needs for traces (config `telemetry.otlp`). */
export { TRACING_WORKFLOW_MODULES } from './worker/telemetry/tracing-modules';
/** The activities a worker registers, for workers assembled by hand. */
export { createActivities, type Activities, type ActivityDependencies } from './activities';
/** The idempotency store on one machine (SQLite); PostgreSQL is chosen by config for several machines. */
export { openSqliteStore } from './intents/sqlite-store';
/** The interface of an idempotency store and its records. */
export type { IdempotencyStore, IntentRecord, SentNotification } from './intents/intent-store';
/** A notification channel of your own (given to `createActivities({ notifyChannels })`), and the failure it throws. */
export { ChannelFailure, type NotificationChannel } from './notify/notification-channel';
/** What a channel is given to send: the fields every channel words alike, redacted, escaped and bounded. */
export type { NotificationFields, NotificationMessage } from './notify/notification-message';
/** Starts Temporal's dev server from the installed binaries, or reuses one that answers. */
export { ensureServer, startDevServer, type DevServer, type ServerLease } from './server/dev-server';

// Starting and deciding on turns
/** The typed client: start, follow, query, approve (also with edited arguments), deny and resolve turns over Temporal's client SDK. */
export {
  TollgateClient,
  TurnEndedError,
  type ApprovalInboxEntry,
  type DecisionOptions,
  type InboxEntry,
  type LiveView,
  type ResolutionInboxEntry,
  type ResolveOptions,
  type TurnHandle,
} from './client/tollgate-client';
/** The turn workflow, for `client.workflow.start<typeof agentTurn>` from any Temporal client code. */
export { agentTurn } from './workflows/agent-turn';
/** The long-lived conversation workflow: one turn per `send`, one at a time, with the earlier answers. */
export { conversation } from './workflows/conversation';
/** The turn's messages: `state` query, `approval` signal, `decide` update, `resolve` signal and update; the conversation's `send`, `history`, `close`. */
export {
  approvalSignal,
  closeConversationSignal,
  decideUpdate,
  historyQuery,
  raiseTokenBudgetUpdate,
  resolveSignal,
  resolveUpdate,
  sendUpdate,
  stateQuery,
} from './workflows/messages';
/** The task queue and workflow type other programs start turns with. */
export { AGENT_TURN_WORKFLOW_TYPE, DEFAULT_TASK_QUEUE } from './common/defaults';
/** The search attributes a turn sets: its task id, whether a call waits for approval, and what it waits for a person on. */
export { AWAITING_APPROVAL_SEARCH_ATTRIBUTE, TASK_ID_SEARCH_ATTRIBUTE, WAITING_FOR_SEARCH_ATTRIBUTE } from './common/search-attributes';

// The contract's data
/** Effect levels, error codes, call and turn statuses. */
export { ERROR_CODES, TOOL_EFFECTS, type ErrorCode, type ToolCallStatus, type ToolEffect, type TurnStatus } from './common/codes';
/** What each effect level means, as data: how it is retried, whether it needs a status check, an intent, an approval. */
export { EFFECT_TRAITS, type EffectTraits, type WriteEffect } from './common/effects';
/** A conversation's input and state, its messages and the token ledger it keeps across turns. */
export type { ConversationInput, ConversationState, TurnMessage, TokenLedger } from './common/contract/conversation';
/** Each kind of decision's pending entry, decision and receipt. */
export type {
  ApprovalDecision,
  DecisionReceipt,
  Grant,
  GrantRequest,
  PendingApproval,
  PendingResolution,
  RejectedDecision,
  ResolutionDecision,
  ResolutionReceipt,
} from './common/contract/decisions';
/** A tool call as the model asked for it, as an approver edited it, as it ended (its event and result). */
export type { ApprovalRecord, CallEdit, ToolCallRequest, ToolEvent, ToolResult } from './common/contract/tools';
/** A turn's input and result, its limits, state and phase, and the scripted model's steps. */
export type {
  AgentTurnInput,
  AgentTurnResult,
  ModelInterruption,
  ModelSelection,
  ScriptStep,
  TurnLimits,
  TurnPhase,
  TurnState,
  Usage,
} from './common/contract/turn';

// Configuration
/** The validated config: temporal.config.yaml, a Temporal profile and the environment, layered. */
export type { TollgateConfig } from './config/config-schema';
/** The config's `mcp` section as written, as `mcpToolSource()` takes it. */
export type { McpConfigInput } from './tools/mcp/mcp-config';
/** The config's `openapi` section as written, as `openapiToolSource()` takes it. */
export type { OpenapiConfigInput } from './tools/openapi/openapi-config';
/** Loads and validates the config; a bad key is a ConfigError naming it. */
export { ConfigError, loadConfig, parseConfig } from './config/load-config';
