import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The business task a turn belongs to; lets `temporal workflow list` find every turn of a task. */
export const TASK_ID_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TollgateTaskId', SearchAttributeType.KEYWORD);

/** True while a turn waits for a human decision: the approvals inbox. */
export const AWAITING_APPROVAL_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TollgateAwaitingApproval', SearchAttributeType.BOOL);

/** What a turn waits for a person on, one value per kind: `approval`, `resolution` (a write whose outcome is unknown), `resume`. */
export const WAITING_FOR_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TollgateWaitingFor', SearchAttributeType.KEYWORD_LIST);

/** The values of `TollgateWaitingFor`. */
export type WaitingKind = 'approval' | 'resolution' | 'resume';

/** The search attributes a server must have registered before turns run, with their CLI type names. */
export const REQUIRED_SEARCH_ATTRIBUTES = [
  { key: TASK_ID_SEARCH_ATTRIBUTE, cliType: 'Keyword' },
  { key: AWAITING_APPROVAL_SEARCH_ATTRIBUTE, cliType: 'Bool' },
  { key: WAITING_FOR_SEARCH_ATTRIBUTE, cliType: 'KeywordList' },
] as const;
