import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The business task a turn belongs to; lets `temporal workflow list` find every turn of a task. */
export const TASK_ID_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TollgateTaskId', SearchAttributeType.KEYWORD);

/** True while a turn waits for a human decision: the approvals inbox. */
export const AWAITING_APPROVAL_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TollgateAwaitingApproval', SearchAttributeType.BOOL);

/**
 * What a turn waits for a person on: `approval` (an irreversible call), `resolution` (a write whose
 * outcome is unknown), `resume` (a model stream cut off after chunks went out). Empty or unset while
 * nothing waits: the one inbox is `TollgateWaitingFor IN ('approval', 'resolution', 'resume')`.
 */
export const WAITING_FOR_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TollgateWaitingFor', SearchAttributeType.KEYWORD_LIST);

/**
 * The root turn of a tree of turns: set on every subagent's turn (and by TollgateClient on the turns
 * it starts), so `TollgateRootWorkflowId = '<root>'` lists a whole tree and, with
 * `TollgateAwaitingApproval = true`, the turns in it that wait. A workflow id only, never user data.
 */
export const ROOT_WORKFLOW_ID_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TollgateRootWorkflowId', SearchAttributeType.KEYWORD);

/** The kinds of wait `TollgateWaitingFor` lists. */
export const WAITING_KINDS = ['approval', 'resolution', 'resume'] as const;

/** One kind of wait for a person. */
export type WaitingKind = (typeof WAITING_KINDS)[number];

/** The search attributes a server must have registered before turns run, with their CLI type names. */
export const REQUIRED_SEARCH_ATTRIBUTES = [
  { key: TASK_ID_SEARCH_ATTRIBUTE, cliType: 'Keyword' },
  { key: AWAITING_APPROVAL_SEARCH_ATTRIBUTE, cliType: 'Bool' },
  { key: WAITING_FOR_SEARCH_ATTRIBUTE, cliType: 'KeywordList' },
  { key: ROOT_WORKFLOW_ID_SEARCH_ATTRIBUTE, cliType: 'Keyword' },
] as const;
