import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019';
import { Ajv2020 } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { z } from 'zod';

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

const validators = new Map<string, AnyAjv>();

/** One validator per JSON Schema dialect, chosen by the schema's `$schema` (draft-07 when it names none). */
function ajvFor(schema: Record<string, unknown>): AnyAjv {
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
  const kind = dialect.includes('2020-12') ? '2020' : dialect.includes('2019-09') ? '2019' : '07';
  let ajv = validators.get(kind);
  if (!ajv) {
    const options = { allErrors: true, strict: false, validateSchema: true };
    ajv = kind === '2020' ? new Ajv2020(options) : kind === '2019' ? new Ajv2019(options) : new Ajv(options);
    addFormats.default(ajv as Ajv);
    validators.set(kind, ajv);
  }
  return ajv;
}

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
 * Schema validator, so the boundary refuses a bad call (`invalid_arguments`) before the server
 * sees it. Throws when the schema itself does not compile.
 */
export function jsonSchemaInput(schema: unknown): z.ZodType {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new Error('the input schema is not a JSON object');
  let validate: ValidateFunction;
  try {
    validate = ajvFor(schema as Record<string, unknown>).compile(schema);
  } catch (error) {
    throw new Error(`the input schema does not compile: ${(error as Error).message}`, { cause: error });
  }
  return z.unknown().superRefine((value, context) => {
    if (validate(value)) return;
    for (const problem of validate.errors ?? []) {
      const where = pointerPath(problem.instancePath);
      if (problem.keyword === 'required') where.push(String(problem.params.missingProperty));
      const extra = problem.keyword === 'additionalProperties' ? ` (${String(problem.params.additionalProperty)})` : '';
      context.addIssue({ code: 'custom', path: where, message: `${problem.message ?? 'invalid'}${extra}` });
    }
  });
}
