import { Ajv, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019';
import { Ajv2020 } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import {
  addWorkKeyword,
  checkWithinBudget,
  prepareBoundedSchema,
  SchemaBudgetError,
  type SchemaBudget,
} from '../../hardened/bounded-schema';
import { DEFAULT_REGEX_BUDGET, LINEAR_REGEX_AJV_OPTIONS, withRegexBudget } from '../../hardened/linear-regex';
import { canonicalJson } from '../canonical-json';

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

/** One problem a schema found in a value: where (a JSON pointer, as ajv gives it) and what. */
export interface SchemaProblem {
  instancePath: string;
  keyword: string;
  message: string;
  params: Record<string, unknown>;
}

/** A compiled schema from outside: `check` says whether a value fits, in time bounded by the value's size. */
export interface CheckedSchema {
  check(value: unknown): { valid: true } | { valid: false; problems: SchemaProblem[] };
}

const validators = new Map<string, AnyAjv>();

/**
 * `uniqueItems` by the canonical JSON of each item in one hash set: linear in the array's size,
 * where ajv's own check compares every pair of objects (quadratic, seconds for a few thousand).
 */
function addLinearUniqueItems(ajv: AnyAjv): void {
  ajv.removeKeyword('uniqueItems');
  const validate = function uniqueItems(this: unknown, schema: boolean, data: unknown[]): boolean {
    if (!schema) return true;
    const seen = new Map<string, number>();
    for (const [index, item] of data.entries()) {
      const text = canonicalJson(item);
      const first = seen.get(text);
      if (first !== undefined) {
        validate.errors = [
          {
            keyword: 'uniqueItems',
            message: `must NOT have duplicate items (items ## ${first} and ${index} are identical)`,
            params: { i: index, j: first },
          },
        ];
        return false;
      }
      seen.set(text, index);
    }
    return true;
  } as ((schema: boolean, data: unknown[]) => boolean) & { errors?: unknown[] };
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate: validate as never });
}

/** One hardened validator per JSON Schema dialect, chosen by the schema's `$schema` (draft-07 when it names none). */
function ajvFor(schema: Record<string, unknown>): AnyAjv {
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
  const kind = dialect.includes('2020-12') ? '2020' : dialect.includes('2019-09') ? '2019' : '07';
  let ajv = validators.get(kind);
  if (!ajv) {
    // `verbose` puts the offending value on each error, so a pattern check skipped for its cost can say how long the value was.
    const options: Options = { allErrors: true, strict: false, validateSchema: true, verbose: true, ...LINEAR_REGEX_AJV_OPTIONS };
    ajv = kind === '2020' ? new Ajv2020(options) : kind === '2019' ? new Ajv2019(options) : new Ajv(options);
    addFormats.default(ajv as Ajv);
    addLinearUniqueItems(ajv);
    addWorkKeyword(ajv);
    validators.set(kind, ajv);
  }
  return ajv;
}

/** The first line of a thrown value's message. */
function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0];
}

/**
 * Compiles a JSON Schema from outside (an MCP tool's input or output schema, an OpenAPI operation's input) with a validator
 * that cannot be made to hang: the schema is measured first within its work budget (size, depth,
 * and what its references expand to: see `prepareBoundedSchema`), each check stops once it has
 * visited `maxCheckWork` subschemas or meets a value nested past `maxValueDepth`, patterns run on a
 * linear-time engine under one budget per check (a check that would pass it fails, saying so),
 * `uniqueItems` is linear, and a schema whose references recurse without end fails the check
 * instead of throwing out of it. Throws, naming the cause, when the schema does not compile (a
 * pattern RE2 cannot run included) or is over its work budget.
 */
export function compileOutsideSchema(
  schema: unknown,
  { regexBudget = DEFAULT_REGEX_BUDGET, schemaBudget = {} }: { regexBudget?: number; schemaBudget?: Partial<SchemaBudget> } = {},
): CheckedSchema {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new Error('the schema is not a JSON object');
  let prepared;
  try {
    prepared = prepareBoundedSchema(schema, schemaBudget);
  } catch (error) {
    if (SchemaBudgetError.isInstance(error)) throw new Error(`the schema is over its work budget: ${error.message}`, { cause: error });
    throw error;
  }
  let validate: ValidateFunction;
  try {
    validate = ajvFor(schema as Record<string, unknown>).compile(prepared.schema);
  } catch (error) {
    throw new Error(`the schema does not compile: ${firstLine(error)}`, { cause: error });
  }
  return {
    check(value) {
      const bounded = checkWithinBudget(value, prepared.budget, () => withRegexBudget(() => validate(value), regexBudget));
      if (!bounded.ran) {
        // Too deep, too much work, or a stack overflow of a recursive `$ref`: the value cannot be shown to fit.
        const message = `could not be checked against the schema: ${bounded.why}`;
        return { valid: false, problems: [{ instancePath: '', keyword: 'schema', message, params: {} }] };
      }
      const outcome = bounded.value;
      if (outcome.value) return { valid: true };
      const problems = (validate.errors ?? []).map((problem): SchemaProblem => {
        const { instancePath, keyword, params } = problem;
        let message = problem.message ?? 'invalid';
        if (keyword === 'pattern' && outcome.exhausted && typeof problem.data === 'string') {
          message = `is ${problem.data.length} characters, too long to be checked against the pattern ${JSON.stringify(String(params.pattern))} within the matching budget (${regexBudget} instruction-characters per check)`;
        }
        return { instancePath, keyword, message, params: params as Record<string, unknown> };
      });
      if (outcome.exhausted && !problems.some((problem) => problem.keyword === 'pattern')) {
        // A `patternProperties` key skipped for its cost: ajv then reports whatever that key failed, so say why too.
        problems.push({
          instancePath: '',
          keyword: 'pattern',
          message: `holds names or texts too long to be checked against the schema's patterns within the matching budget (${regexBudget} instruction-characters per check)`,
          params: {},
        });
      }
      return { valid: false, problems };
    },
  };
}
