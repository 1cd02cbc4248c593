import type { WaitingKind } from '../../common/search-attributes';

/**
 * What one turn remembers of the decisions it took, for every kind of wait (approvals, resolutions,
 * resumes): each wait's round, and every signature taken. A decision satisfies exactly one wait:
 * a signature counts once in the whole turn, whatever it was made for, and a call (or step) that
 * waits again takes only a decision that names its new round.
 */
export class DecisionLedger {
  private readonly rounds = new Map<string, number>();
  private readonly signatures = new Set<string>();

  /** Opens the next wait of `id` (a call id, or a resume's step) for one kind, and says its round: 1, 2, … */
  nextRound(kind: WaitingKind, id: string): number {
    const key = `${kind}:${id}`;
    const round = (this.rounds.get(key) ?? 0) + 1;
    this.rounds.set(key, round);
    return round;
  }

  /**
   * Why a decision's `round` does not name the wait open now (`what` names it for the message), or
   * nothing when it does. Round 1 may leave it out; later rounds need it, so that a decision made
   * for an earlier wait never counts for this one.
   */
  roundProblem(sent: unknown, open: number, what: string): string | undefined {
    if (sent === undefined) {
      return open > 1
        ? `round is required: ${what} waits for the ${ordinal(open)} time; send "round": ${open} (the state query shows it)`
        : undefined;
    }
    if (typeof sent !== 'number' || !Number.isInteger(sent) || sent < 1) return 'round must be a whole number from 1';
    return sent === open ? undefined : `round ${sent} is not the wait open now: ${what} waits in round ${open}`;
  }

  /** Whether a signature was taken before in this turn (signatures are compared as sent; only their one canonical text verifies). */
  signatureTaken(signature: unknown): boolean {
    return typeof signature === 'string' && this.signatures.has(signature);
  }

  /** Remembers a signature of a decision taken. */
  takeSignature(signature: unknown): void {
    if (typeof signature === 'string') this.signatures.add(signature);
  }
}

function ordinal(round: number): string {
  const tens = round % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][round % 10] ?? 'th');
  return `${round}${suffix}`;
}
