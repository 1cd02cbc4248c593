// The catalogue of failure types: the lists that derive from it, and the throw sites that name its types.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MODEL_FAILURES, MODEL_STEP_NON_RETRYABLE, WRITE_INTERRUPTED } from '../../common/activity-types';
import { BoundaryResults } from '../../common/boundary-results';
import { ERROR_CODES, NON_RETRYABLE_CODES } from '../../common/codes';
import { FAILURE_CATALOGUE, FAILURE_TYPE, failureTypes } from '../../common/failures';

const ROOT = path.join(__dirname, '..', '..');

describe('the failure catalogue', () => {
  it('gives the tool-call codes and those no retry repeats, in their order', () => {
    expect(ERROR_CODES).toEqual([
      'unknown_tool',
      'invalid_arguments',
      'forbidden',
      'transient_failure',
      'tool_failure',
      'outcome_unknown',
      'denied',
      'approval_expired',
      'not_run',
      'delegation_refused',
    ]);
    expect(NON_RETRYABLE_CODES).toEqual(['unknown_tool', 'invalid_arguments', 'forbidden', 'tool_failure', 'outcome_unknown', 'not_run']);
  });

  it("gives the model step's failures and the ones its retry policy never repeats", () => {
    expect(MODEL_FAILURES).toEqual({
      unavailable: 'model_unavailable',
      streamInterrupted: 'stream_interrupted',
      error: 'model_error',
      invalidModel: 'invalid_model',
      keptContentMissing: 'kept_content_missing',
    });
    expect(MODEL_STEP_NON_RETRYABLE).toEqual(['invalid_model', 'agent_mismatch', 'stream_interrupted', 'model_error']);
    expect(WRITE_INTERRUPTED).toBe('write_interrupted');
    expect(failureTypes('workflow')).toEqual(['invalid_input', 'invalid_edit', 'token_budget_exhausted']);
  });

  it('names every type by itself, and each belongs to one source', () => {
    for (const type of Object.keys(FAILURE_CATALOGUE)) expect(FAILURE_TYPE[type as keyof typeof FAILURE_TYPE]).toBe(type);
    const sources = (['tool_call', 'write', 'model_step', 'workflow'] as const).flatMap((source) => failureTypes(source));
    expect(sources.sort()).toEqual(Object.keys(FAILURE_CATALOGUE).sort());
  });

  it('marks only the retried codes retryable by default', () => {
    for (const code of ERROR_CODES) expect(BoundaryResults.failure(code, 'm').result.retryable).toBe(code === 'transient_failure');
  });

  it('is named at every throw site and retry policy: no failure type is spelt as a literal there', () => {
    const literal = [/\btype:\s*['"][a-z_]+['"]/, /nonRetryableErrorTypes:\s*\[[^\]]*['"]/];
    const found: string[] = [];
    for (const folder of ['activities', 'workflows', 'hardened', 'intents', 'worker']) {
      for (const entry of readdirSync(path.join(ROOT, folder), { withFileTypes: true, recursive: true })) {
        if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
        const file = path.join(entry.parentPath, entry.name);
        const lines = readFileSync(file, 'utf8').split('\n');
        lines.forEach((line, index) => {
          const failureSite = /ApplicationFailure|nonRetryableErrorTypes/.test(lines.slice(Math.max(0, index - 3), index + 1).join('\n'));
          if (failureSite && literal.some((pattern) => pattern.test(line)))
            found.push(`${path.relative(ROOT, file)}:${index + 1}: ${line.trim()}`);
        });
      }
    }
    expect(found).toEqual([]);
  });
});
