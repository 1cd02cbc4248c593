import type { PendingWait } from '../common/contract/decisions';
import { forTerminal } from './terminal-text';

/** Who was told of a waiting call, as `tollgate inbox` prints it under the call: each channel, what became of it and when, and an escalation. */
export function describeNotices(wait: Pick<PendingWait, 'notifications' | 'escalatedTo'>): string[] {
  const lines: string[] = [];
  if (wait.escalatedTo) lines.push(`  escalated to ${forTerminal(wait.escalatedTo)}, whose members may decide too`);
  for (const receipt of wait.notifications ?? []) {
    const attempts = receipt.attempts > 1 ? ` after ${receipt.attempts} attempts` : '';
    const why = receipt.error ? `: ${receipt.error}` : '';
    lines.push(forTerminal(`  told (${receipt.kind ?? 'notice'}) ${receipt.channel}: ${receipt.status} at ${receipt.at}${attempts}${why}`));
  }
  return lines;
}
