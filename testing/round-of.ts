/**
 * The `round` a decision names for a wait, as a person's client sends it: nothing for a first wait,
 * `{ round }` from the second on (see docs/approvals.md, "One decision, one wait").
 */
export function roundOf(pending: { round: number }): { round?: number } {
  return pending.round > 1 ? { round: pending.round } : {};
}
