import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The business task a turn belongs to; lets `temporal workflow list` find every turn of a task. */
export const TASK_ID_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TollgateTaskId', SearchAttributeType.KEYWORD);

/** True while a turn waits for a human decision: the approvals inbox. */
export const AWAITING_APPROVAL_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TollgateAwaitingApproval', SearchAttributeType.BOOL);

/** The search attributes a server must have registered before turns run, with their CLI type names. */
export const REQUIRED_SEARCH_ATTRIBUTES = [
  { key: TASK_ID_SEARCH_ATTRIBUTE, cliType: 'Keyword' },
  { key: AWAITING_APPROVAL_SEARCH_ATTRIBUTE, cliType: 'Bool' },
] as const;
