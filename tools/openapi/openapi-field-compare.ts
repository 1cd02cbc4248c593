import { canonicalJson } from '../canonical-json';
import type { FieldNormalisation } from './openapi-config';

/** What a status GET's answer says of the fields a write sent: they hold, one differs, or it cannot tell. */
export type FieldVerdict = 'holds' | 'differs' | 'undecided';

function normalised(value: unknown, normalisations: readonly FieldNormalisation[]): unknown {
  if (typeof value !== 'string') return value;
  let text = value;
  for (const normalisation of normalisations) {
    if (normalisation === 'trim') text = text.trim();
    else if (normalisation === 'lowercase') text = text.toLowerCase();
    else text = text.normalize('NFC');
  }
  return text;
}

/**
 * Whether the resource a GET answered holds what a PUT or PATCH sent: the fields `compare` names
 * (each normalised as the API stores it, on both sides), or every field sent, as sent, when it names
 * none. A field the answer lacks, or nothing to compare, is `undecided`. A difference is only that:
 * the write may have applied and been normalised in a way nobody declared, or been changed since,
 * so it never proves the write did not apply.
 */
export function compareWrittenFields(
  sent: Record<string, unknown>,
  held: unknown,
  compare?: Readonly<Record<string, readonly FieldNormalisation[]>>,
): FieldVerdict {
  if (typeof held !== 'object' || held === null || Array.isArray(held)) return 'undecided';
  const now = held as Record<string, unknown>;
  const fields = compare ? Object.keys(compare).filter((field) => Object.hasOwn(sent, field)) : Object.keys(sent);
  if (fields.length === 0) return 'undecided';
  let verdict: FieldVerdict = 'holds';
  for (const field of fields) {
    if (!Object.hasOwn(now, field)) return 'undecided';
    const normalisations = compare?.[field] ?? [];
    if (canonicalJson(normalised(sent[field], normalisations)) !== canonicalJson(normalised(now[field], normalisations)))
      verdict = 'differs';
  }
  return verdict;
}
