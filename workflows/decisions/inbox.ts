import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { TurnState } from '../../common/contract/turn';
import { AWAITING_APPROVAL_SEARCH_ATTRIBUTE, WAITING_FOR_SEARCH_ATTRIBUTE, WAITING_KINDS } from '../../common/search-attributes';
import { renderDetails } from './details';
import type { Kind } from './desk';
import { DECISION_KINDS } from './kinds';

/** Whether a turn has a wait of `kind` open. */
function waits(state: TurnState, kind: Kind): boolean {
  return DECISION_KINDS[kind].waiting(state).length > 0;
}

function listed(): Kind[] {
  const kinds = workflowInfo().typedSearchAttributes.get(WAITING_FOR_SEARCH_ATTRIBUTE) ?? [];
  return WAITING_KINDS.filter((kind) => kinds.includes(kind));
}

/**
 * The change that lists `kind` in `TollgateWaitingFor` (`waiting` true) or takes it off; nothing
 * when the list is already so. Each kind is listed once however many items of it wait.
 */
function waitingForChange(kind: Kind, waiting: boolean): SearchAttributeUpdatePair | undefined {
  const kinds = listed();
  if (kinds.includes(kind) === waiting) return undefined;
  const value = waiting ? WAITING_KINDS.filter((known) => known === kind || kinds.includes(known)) : kinds.filter((k) => k !== kind);
  return { key: WAITING_FOR_SEARCH_ATTRIBUTE, value };
}

/**
 * The one route from a turn's waits to what shows them outside: `TollgateWaitingFor` (the one
 * inbox), `TollgateAwaitingApproval` and the workflow's current details (the Web UI's markdown).
 * `changed` is the kind whose waits changed: a kind other than approval gets an upsert of its own
 * when its listing changes; then the approval flag and listing go in one upsert (so that an approval
 * costs no more history events than the flag alone), and the details are set.
 */
export function publishWaits(state: TurnState, changed?: Kind): void {
  if (changed !== undefined && changed !== 'approval') {
    const change = waitingForChange(changed, waits(state, changed));
    if (change) upsertSearchAttributes([change]);
  }
  const awaiting = waits(state, 'approval');
  const changes: SearchAttributeUpdatePair[] = [];
  if (workflowInfo().typedSearchAttributes.get(AWAITING_APPROVAL_SEARCH_ATTRIBUTE) !== awaiting) {
    changes.push({ key: AWAITING_APPROVAL_SEARCH_ATTRIBUTE, value: awaiting });
  }
  const approvals = waitingForChange('approval', awaiting);
  if (approvals) changes.push(approvals);
  if (changes.length > 0) upsertSearchAttributes(changes);
  setCurrentDetails(renderDetails(state));
}
