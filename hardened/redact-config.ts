import { z } from 'zod';
import { isRegExp } from '../config/schema-parts';

/** The `redact` section: patterns redacted from every exit, over the built-in ones (redact.ts). */
export const redactSchema = z.strictObject({
  patterns: z.array(z.string().refine(isRegExp, 'not a valid regular expression')).default([]),
});
