import { z } from 'zod';
import { compileOutsideSchema } from './outside-schema';

/** A JSON pointer (`/a/0/b`) as a path of keys, as zod issues carry it. */
function pointerPath(pointer: string): Array<string | number> {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

/**
 * A zod schema that accepts exactly what a server's JSON Schema accepts, checked by a real JSON
 * Schema validator hardened against schemas from outside (see `compileOutsideSchema`), so the
 * boundary refuses a bad call (`invalid_arguments`) before the server sees it, and no schema can
 * stall the event loop doing so (a check past its work budget refuses the call too). Throws when
 * the schema itself does not compile or is over its work budget.
 */
export function jsonSchemaInput(schema: unknown): z.ZodType {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new Error('the input schema is not a JSON object');
  let checked;
  try {
    checked = compileOutsideSchema(schema);
  } catch (error) {
    const message = (error as Error).message;
    throw new Error(message.startsWith('the schema ') ? `the input ${message.slice('the '.length)}` : message, { cause: error });
  }
  return z.unknown().superRefine((value, context) => {
    const outcome = checked.check(value);
    if (outcome.valid) return;
    for (const problem of outcome.problems) {
      const where = pointerPath(problem.instancePath);
      if (problem.keyword === 'required') where.push(String(problem.params.missingProperty));
      const extra = problem.keyword === 'additionalProperties' ? ` (${String(problem.params.additionalProperty)})` : '';
      context.addIssue({ code: 'custom', path: where, message: `${problem.message}${extra}` });
    }
  });
}
