// The waits below a turn, without a server: which reports a turn takes from below, in which order,
// what it reports to its parent, and how a subagent's wait is printed at the terminal.
import { describe, expect, it } from 'vitest';
import { describeLineage } from '../../client/cli/decisions';
import type { WaitBelow, WaitsReport } from '../../common/contract/decisions';
import type { TurnLineage } from '../../common/contract/turn';
import { MAX_WAITS_BELOW, WaitsBelow } from '../../workflows/decisions/waits-below';
import { startingState } from '../../workflows/turn/turn-run';
import { renderDetails } from '../../workflows/decisions/details';

const ROOT = 'turn-r';
const CHILD = `${ROOT}-call-call-0-1`;
const GRANDCHILD = `${CHILD}-call-call-2-0`;

function lineageOf(workflowId: string, parent: string, depth: number): WaitBelow['lineage'] {
  return {
    rootWorkflowId: ROOT,
    parentWorkflowId: parent,
    parentCallId: 'call-0-1',
    path: ['a', 'b', 'c'].slice(0, depth + 1),
    request: 'r',
    depth,
    workflowId,
  };
}

function wait(workflowId: string, parent: string, depth: number, callId = 'call-0-0'): WaitBelow {
  return {
    kind: 'approval',
    workflowId,
    callId,
    tool: 'charge_card',
    argsDigest: 'd',
    round: 1,
    expiresAt: 'x',
    lineage: lineageOf(workflowId, parent, depth),
  };
}

/** A turn's waits below, with the reports it sent to its parent. */
function turn(workflowId: string, lineage?: TurnLineage) {
  const state = startingState('task');
  const sent: Array<{ parent: string; report: WaitsReport }> = [];
  const below = new WaitsBelow(state, lineage, { workflowId: () => workflowId, send: (parent, report) => sent.push({ parent, report }) });
  return { state, below, sent };
}

describe('waits below a turn', () => {
  it('takes only well-formed reports from a turn below it, naming waits in that turn or below it, of its own tree', () => {
    const { below, state } = turn(ROOT);
    const report = (workflowId: string, waits: unknown[], sequence: unknown = 1) => ({ workflowId, sequence, waits });
    expect(below.judge(report('turn-other-call-x', []))).toContain('must come from a turn below this one');
    expect(below.judge(report(ROOT, []))).toContain('must come from a turn below this one');
    expect(below.judge(report(CHILD, [], 1.5))).toContain('whole sequence number');
    expect(below.judge(report(CHILD, [wait('turn-elsewhere', ROOT, 1)]))).toContain(`must be in that turn or below it`);
    expect(
      below.judge(report(CHILD, [{ ...wait(CHILD, ROOT, 1), lineage: { ...lineageOf(CHILD, ROOT, 1), rootWorkflowId: 'turn-x' } }])),
    ).toContain(`lineage in the tree of ${ROOT}`);
    expect(below.judge(report(CHILD, [{ ...wait(CHILD, ROOT, 1), lineage: lineageOf(GRANDCHILD, CHILD, 2) }]))).toContain('lineage');
    expect(below.judge(report(CHILD, [{ ...wait(CHILD, ROOT, 1), kind: 'payment' }]))).toContain('unknown kind');
    expect(below.judge(report(CHILD, [null]))).toContain('must be in that turn or below it');
    expect(
      below.judge(
        report(
          CHILD,
          Array.from({ length: MAX_WAITS_BELOW + 1 }, () => wait(CHILD, ROOT, 1)),
        ),
      ),
    ).toContain(`at most ${MAX_WAITS_BELOW}`);
    expect(below.judge('x')).toContain('must be an object');
    expect(below.judge(report(CHILD, [wait(CHILD, ROOT, 1), wait(GRANDCHILD, CHILD, 2)]))).toBeUndefined();
    expect(state.waitsBelow).toBeUndefined();
  });

  it('keeps the newest report of each child, whatever order they arrive in, and forgets a child that ended', () => {
    const { below, state, sent } = turn(ROOT);
    below.take({ workflowId: CHILD, sequence: 2, waits: [wait(GRANDCHILD, CHILD, 2)] });
    below.take({ workflowId: CHILD, sequence: 1, waits: [wait(CHILD, ROOT, 1), wait(GRANDCHILD, CHILD, 2)] });
    expect(state.waitsBelow).toEqual([wait(GRANDCHILD, CHILD, 2)]);
    const sibling = `${ROOT}-call-call-0-2`;
    below.take({ workflowId: sibling, sequence: 1, waits: [wait(sibling, ROOT, 1)] });
    expect(state.waitsBelow!.map((entry) => entry.workflowId)).toEqual([GRANDCHILD, sibling]);
    below.childEnded(CHILD);
    below.take({ workflowId: CHILD, sequence: 3, waits: [wait(CHILD, ROOT, 1)] });
    expect(state.waitsBelow!.map((entry) => entry.workflowId)).toEqual([sibling]);
    // A root turn has no parent to tell.
    expect(sent).toEqual([]);
  });

  it("reports its own waits and its children's to its parent, once per change, numbered", () => {
    const lineage: TurnLineage = {
      rootWorkflowId: ROOT,
      parentWorkflowId: ROOT,
      parentCallId: 'call-0-1',
      path: ['a', 'b'],
      request: 'r',
      depth: 1,
    };
    const { below, state, sent } = turn(CHILD, lineage);
    expect(below.waitLineage()).toEqual({ ...lineage, workflowId: CHILD });
    state.pendingApprovals.push({ ...wait(CHILD, ROOT, 1), args: { cents: 1 }, requestedAt: 'y' } as never);
    below.changed();
    below.changed();
    below.take({ workflowId: GRANDCHILD, sequence: 1, waits: [wait(GRANDCHILD, CHILD, 2)] });
    state.pendingApprovals.length = 0;
    below.changed();
    expect(sent.map(({ parent, report }) => [parent, report.sequence, report.waits.map((entry) => entry.workflowId)])).toEqual([
      [ROOT, 1, [CHILD]],
      [ROOT, 2, [CHILD, GRANDCHILD]],
      [ROOT, 3, [GRANDCHILD]],
    ]);
    // What goes up names the wait, not its arguments.
    expect(sent[0].report.waits[0]).not.toHaveProperty('args');
  });

  it('prints a subagent wait’s lineage at the terminal with every hidden or control character escaped', () => {
    const lines = describeLineage({
      ...lineageOf(GRANDCHILD, CHILD, 2),
      path: ['research', '\u001b[2Kbilling'],
      request: 'pay \u202Eevil\u202C\nnow\u0007',
    });
    const text = lines.join('\n');
    expect(text).toContain('subagent research → \\u{1B}[2Kbilling (depth 2) below the root turn turn-r');
    expect(text).toContain(`its parent ${CHILD} asked (call call-0-1): pay \\u{202E}evil\\u{202C}`);
    expect(text.replaceAll('\n', '')).not.toMatch(/[\p{Cc}\p{Cf}]/u);
    expect(describeLineage(undefined)).toEqual([]);
  });
  it("shows the Web UI's details of a subagent and of the root: where each stands, escaped, and no request text", () => {
    const child = startingState('task');
    const lineage = { ...lineageOf(CHILD, ROOT, 1), path: ['lead', 'bill\u202Eing|x'], request: 'secret plan' };
    child.pendingApprovals.push({ ...wait(CHILD, ROOT, 1), args: {}, requestedAt: 'y', lineage } as never);
    const shown = renderDetails(child);
    expect(shown).toContain(`**Subagent** agents lead → bill\\u{202E}ing\\|x · depth 1 · root \`${ROOT}\``);
    expect(shown).not.toContain('secret plan');
    const root = startingState('task');
    root.waitsBelow = [wait(GRANDCHILD, CHILD, 2)];
    const listed = renderDetails(root);
    expect(listed).toContain("### Waiting in subagents' turns");
    expect(listed).toContain(`- **call-0-0** · approval · charge_card · in \`${GRANDCHILD}\` · agents a → b → c · expires x`);
  });
});
