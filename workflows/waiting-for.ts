import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { WAITING_FOR_SEARCH_ATTRIBUTE, WAITING_KINDS, type WaitingKind } from '../common/search-attributes';

function current(): WaitingKind[] {
  const listed = workflowInfo().typedSearchAttributes.get(WAITING_FOR_SEARCH_ATTRIBUTE) ?? [];
  return WAITING_KINDS.filter((kind) => listed.includes(kind));
}

/**
 * The bookkeeping of `TollgateWaitingFor` (the one inbox): which kinds of wait for a person a turn
 * is in. Each kind is listed once however many items of it wait; the caller adds it when the
 * first item starts waiting and removes it when the last one is done; a turn that never waits
 * records no upsert.
 */
export const waitingFor = {
  /**
   * The change that lists `kind` (`waiting` true) or takes it off, for an upsert of its own or one
   * made together with other attributes; nothing when the list is already so.
   */
  update(kind: WaitingKind, waiting: boolean): SearchAttributeUpdatePair | undefined {
    const kinds = current();
    if (kinds.includes(kind) === waiting) return undefined;
    const value = waiting ? WAITING_KINDS.filter((known) => known === kind || kinds.includes(known)) : kinds.filter((k) => k !== kind);
    return { key: WAITING_FOR_SEARCH_ATTRIBUTE, value };
  },

  /** Lists `kind` as waiting for a person (an upsert, when it was not listed yet). */
  add(kind: WaitingKind): void {
    const change = waitingFor.update(kind, true);
    if (change) upsertSearchAttributes([change]);
  },

  /** Takes `kind` off the list (an upsert, when it was listed). */
  remove(kind: WaitingKind): void {
    const change = waitingFor.update(kind, false);
    if (change) upsertSearchAttributes([change]);
  },

  /** Whether `kind` is listed now. */
  has(kind: WaitingKind): boolean {
    return current().includes(kind);
  },
};
