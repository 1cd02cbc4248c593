// Tollgate's library API: declare tools, run workers, start and decide on turns from your own code.
export { createActivities, type Activities, type ActivityDependencies } from './activities';
export { builtInTools } from './tools/built-in';
export { ToolError } from './tools/tool-error';
export { defineTool, type IntentContext, type StatusAnswer, type ToolContext, type ToolDefinition, type ToolSpec } from './tools/define-tool';
export { openSqliteStore } from './activities/intents/sqlite-store';
export type { IdempotencyStore, IntentRecord } from './activities/intents/intent-store';
export { ToolOutcome } from './tools/tool-outcome';
export { TollgateClient, TurnEndedError, type DecisionOptions, type InboxEntry, type LiveView, type TurnHandle } from './client/tollgate-client';
export type { ErrorCode, ToolCallStatus, ToolEffect, TurnStatus } from './common/codes';
export { AWAITING_APPROVAL_SEARCH_ATTRIBUTE, TASK_ID_SEARCH_ATTRIBUTE } from './common/search-attributes';
export type * from './common/types';
export type { McpConfigInput, TollgateConfig } from './config/config-schema';
export { ConfigError, loadConfig, parseConfig } from './config/load-config';
export { ensureServer, startDevServer, type DevServer, type ServerLease } from './server/dev-server';
export { createWorker, type CreateWorkerOptions } from './worker/create-worker';
