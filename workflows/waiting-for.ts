import { patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { WAITING_FOR_SEARCH_ATTRIBUTE, WAITING_KINDS, type WaitingKind } from '../common/search-attributes';

/**
 * Turns recorded before this patch never set `TollgateWaitingFor`; every turn since keeps it in
 * step with what waits for a person. The patch is asked only when the attribute must change, so a
 * turn that never waits records neither the marker nor an upsert.
 */
export const WAITING_FOR_PATCH = 'waiting-for-inbox';

function current(): WaitingKind[] {
  const listed = workflowInfo().typedSearchAttributes.get(WAITING_FOR_SEARCH_ATTRIBUTE) ?? [];
  return WAITING_KINDS.filter((kind) => listed.includes(kind));
}

/**
 * The bookkeeping of `TollgateWaitingFor` (the one inbox): which kinds of wait for a person a turn
 * is in. Each kind is listed once however many items of it wait; the caller adds it when the
 * first item starts waiting and removes it when the last one is done.
 */
export const waitingFor = {
  /**
   * The change that lists `kind` (`waiting` true) or takes it off, for an upsert of its own or one
   * made together with other attributes; nothing when the list is already so, or the turn predates
   * the attribute.
   */
  update(kind: WaitingKind, waiting: boolean): SearchAttributeUpdatePair | undefined {
    const kinds = current();
    if (kinds.includes(kind) === waiting) return undefined;
    if (!patched(WAITING_FOR_PATCH)) return undefined;
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
