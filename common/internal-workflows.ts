import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * The system search attribute Temporal's server keeps its own internal workflows apart by (a
 * schedule's, a batch job's): a workflow that has it is left out of every list whose query does not
 * name it, the Web UI's default list and `temporal workflow list` included.
 */
export const NAMESPACE_DIVISION_SEARCH_ATTRIBUTE = defineSearchAttributeKey('TemporalNamespaceDivision', SearchAttributeType.KEYWORD);

/** The division Tollgate's internal workflows (the tool catalogue's) are started in: listed by `TemporalNamespaceDivision = 'tollgate'`. */
export const INTERNAL_DIVISION = 'tollgate';

/** The workflow id prefix of Tollgate's internal workflows: `WorkflowId STARTS_WITH 'tollgate-internal-'` lists them on any server. */
export const INTERNAL_WORKFLOW_ID_PREFIX = 'tollgate-internal-';
