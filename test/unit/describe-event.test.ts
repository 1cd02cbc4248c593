import { describe, expect, it } from 'vitest';
import { describeEvent } from '../../client/follow-turn';
import type { ToolEvent } from '../../common/contract/tools';

const base = { callId: 'call-3-0', step: 2, tool: 'send_message', effect: 'irreversible_write', durationMs: 3, originalSize: 0 };

function event(fields: Partial<ToolEvent>): ToolEvent {
  return { ...base, truncated: false, executions: 0, ...fields } as ToolEvent;
}

describe('the line of a finished call', () => {
  it('says a denial once, with who denied it', () => {
    const line = describeEvent(event({ status: 'denied', code: 'denied', approval: { decision: 'deny', by: 'alice', via: 'person' } }));
    expect(line).toBe('[step 3] send_message (irreversible_write): denied by alice, 0 executions');
    expect(describeEvent(event({ status: 'denied', code: 'denied' }))).toBe(
      '[step 3] send_message (irreversible_write): denied, 0 executions',
    );
  });

  it('keeps the code of an error and who approved a call that ran', () => {
    expect(describeEvent(event({ status: 'error', code: 'outcome_unknown', executions: 1 }))).toBe(
      '[step 3] send_message (irreversible_write): error outcome_unknown, 1 execution',
    );
    const approved = event({ status: 'success', executions: 1, approval: { decision: 'approve', by: 'rule:small', via: 'rule' } });
    expect(describeEvent(approved)).toBe('[step 3] send_message (irreversible_write): success, 1 execution, approved by rule:small');
  });
});
