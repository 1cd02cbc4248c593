// What the inbox does with a decision its page sends: checks who sends it and what it names, and hands
// it to the turn as it is (the update of its kind, answered at once with a receipt or the turn's reason).
// It never adds, removes or changes a field the signature covers.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { ApprovalDecision, ResolutionDecision, ResumeDecision } from '../../common/contract/decisions';
import { decideUpdate, resolveUpdate, resumeUpdate } from '../../workflows/messages';
import { TollgateError } from '../../common/tollgate-error';

/** A decision the inbox or the turn refused, with why, for the person. */
export class DecisionRefused extends TollgateError {
  static override readonly marker = 'tollgate.error.DecisionRefused';
  override name = 'DecisionRefused';
}

/** The kinds of decision the page sends, and the field each names its decider in. */
const DECIDER_FIELD = { approval: 'approver', resolution: 'resolver', resume: 'by' } as const;

/** What the page posts: which kind, which turn, and the decision as signed. */
export interface DecisionRequest {
  kind: keyof typeof DECIDER_FIELD;
  workflowId: string;
  decision: ApprovalDecision | ResolutionDecision | ResumeDecision;
}

/** The request, checked: a known kind, a workflow id, and a decision object named for the signed-in approver. */
export function checkDecisionRequest(body: unknown, approver: string): DecisionRequest {
  if (!body || typeof body !== 'object') throw new DecisionRefused('send { kind, workflowId, decision }');
  const { kind, workflowId, decision } = body as Record<string, unknown>;
  if (typeof kind !== 'string' || !Object.hasOwn(DECIDER_FIELD, kind)) {
    throw new DecisionRefused('kind must be "approval", "resolution" or "resume"');
  }
  if (typeof workflowId !== 'string' || workflowId === '' || workflowId.length > 1000) {
    throw new DecisionRefused('workflowId must name the turn decided on');
  }
  if (!decision || typeof decision !== 'object' || Array.isArray(decision)) throw new DecisionRefused('decision must be an object');
  const fields = decision as Record<string, unknown>;
  const named = fields[DECIDER_FIELD[kind as DecisionRequest['kind']]];
  // The signed-in approver decides as themselves: a decision in another's name (signed or not) is not forwarded.
  if (named !== approver) throw new DecisionRefused(`a decision sent from this inbox names its decider, ${approver} (the one signed in)`);
  if (fields.keyId !== undefined && fields.keyId !== approver) {
    throw new DecisionRefused(`the decision is signed with the key "${String(fields.keyId)}", not ${approver}'s`);
  }
  return { kind: kind as DecisionRequest['kind'], workflowId, decision: decision as DecisionRequest['decision'] };
}

/** Sends a checked decision as its kind's update; the turn's receipt, or why the turn refused it. */
export async function forwardDecision({ client, approver, body }: { client: Client; approver: string; body: unknown }): Promise<unknown> {
  const { kind, workflowId, decision } = checkDecisionRequest(body, approver);
  const handle = client.workflow.getHandle(workflowId);
  try {
    if (kind === 'approval') return await handle.executeUpdate(decideUpdate, { args: [decision as ApprovalDecision] });
    if (kind === 'resolution') return await handle.executeUpdate(resolveUpdate, { args: [decision as ResolutionDecision] });
    return await handle.executeUpdate(resumeUpdate, { args: [decision as ResumeDecision] });
  } catch (error) {
    if (error instanceof WorkflowUpdateFailedError) {
      throw new DecisionRefused(`the turn refused it: ${(error.cause as Error | undefined)?.message ?? error.message}`);
    }
    if (error instanceof WorkflowNotFoundError) throw new DecisionRefused('the turn has ended; nothing waits there any more');
    throw error;
  }
}
