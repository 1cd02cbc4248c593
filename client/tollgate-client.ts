import { Client, WorkflowIdReusePolicy } from '@temporalio/client';
import { createRedactor, type Redactor } from '../hardened/redact';
import { connectClient } from '../connection/temporal-connection';
import { defaultPayloadConverter, type Duration, type Payload, type PayloadCodec } from '@temporalio/common';
import { codecFromEnvironment, ENCRYPTED_CONVERTER_PATHS } from '../codec/aes-gcm-codec';
import { AGENT_TURN_WORKFLOW_TYPE } from '../common/defaults';
import {
  AWAITING_APPROVAL_SEARCH_ATTRIBUTE,
  ROOT_WORKFLOW_ID_SEARCH_ATTRIBUTE,
  TASK_ID_SEARCH_ATTRIBUTE,
  WAITING_FOR_SEARCH_ATTRIBUTE,
} from '../common/search-attributes';
import type {
  GrantRequest,
  ApprovalDecision,
  DecisionReceipt,
  PendingApproval,
  PendingResolution,
  PendingResume,
  ResolutionDecision,
  ResolutionReceipt,
  ResumeDecision,
  ResumeReceipt,
  WaitLineage,
} from '../common/contract/decisions';
import type { AgentTurnInput, AgentTurnResult, TurnState } from '../common/contract/turn';
import type { TollgateConfig } from '../config/config-schema';
import type { agentTurn } from '../workflows';
import { decideUpdate, resolveUpdate, resumeUpdate, stateQuery } from '../workflows/messages';
import { ACTIVITY_NAMES, type StreamProgress } from '../common/activity-types';
import { approverSigningKeyFromEnvironment, type ApproverSigningKey } from '../common/approver-keys';
import { resumeSigningSubject, signDecisionFields } from '../common/signed-decision';
import { approvalDigest } from '../tools/canonical-json';
import { canonicalJson } from '../common/canonical-json';
import { grantRequestProblem } from '../common/grant-request';
import { TollgateError } from '../common/tollgate-error';

/** A decision was sent to a turn that is no longer running. */
export class TurnEndedError extends TollgateError {
  static override readonly marker = 'tollgate.error.TurnEndedError';
  override name = 'TurnEndedError';
}

/** One look at a running turn: its state, and the text its model step has streamed so far. */
export interface LiveView {
  state: TurnState;
  modelText: string;
}

/** Where an inbox entry waits, and what a person must send to end the wait. */
interface InboxPlace {
  workflowId: string;
  runId: string;
  taskId: string;
  /** The exact JSON to send (without signature fields), and the message that takes it. */
  needs: { update: string; signal: string; json: Record<string, unknown> };
}

/** One call waiting for approval, and the turn it belongs to. */
export interface ApprovalInboxEntry extends PendingApproval, InboxPlace {
  kind: 'approval';
}

/** One write whose outcome is unknown, waiting for a person to say whether it took effect. */
export interface ResolutionInboxEntry extends PendingResolution, InboxPlace {
  kind: 'resolution';
}

/** One model step whose stream broke after chunks went out, waiting for a person's resume decision. */
export interface ResumeInboxEntry extends PendingResume, InboxPlace {
  kind: 'resume';
}

/** One thing that waits for a person, across all running turns, by kind (`TollgateWaitingFor`). */
export type InboxEntry = ApprovalInboxEntry | ResolutionInboxEntry | ResumeInboxEntry;

/** What a person says about a write whose outcome is unknown. */
export interface ResolveOptions {
  /** With a signing key, leave it out or give the key's name. */
  resolver?: string;
  note?: string;
  /** The digest of the arguments the person saw (pendingResolutions in the state query). */
  argsDigest: string;
  /** The wait the person decides on (`round` of the pending resolution); the one open now when left out. */
  round?: number;
}

/** Who decided, why, and the digest of the arguments they saw. */
export interface DecisionOptions {
  /** With a signing key, leave it out or give the key's name: a signed decision's approver is its key's name. */
  approver?: string;
  reason?: string;
  argsDigest?: string;
  /**
   * Approvals only: the arguments to run the call with instead (edited), with `argsDigest` the digest of the
   * arguments shown. The turn checks them like a model's call; an invalid edit is rejected (WorkflowUpdateFailedError).
   */
  args?: unknown;
  /** The wait the person decides on (`round` of the pending approval); the one open now when left out. */
  round?: number;
  /**
   * Approvals only: a standing grant given with this approval — later calls of the tool that match
   * `when`, in this task (or conversation), are approved for `forMs` (docs/approvals.md). Signed with the decision.
   */
  grant?: GrantRequest;
}

/** A started turn: enough to find it again from any Temporal client. */
export interface TurnHandle {
  workflowId: string;
  runId: string;
}

function firstLine(text: string, maxChars = 120): string {
  const line = text.trim().split('\n')[0];
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}

/** A workflow id for a new turn of a task: readable, unique per start. */
export function newTurnId(taskId: string, now = Date.now()): string {
  const slug = taskId
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .slice(0, 80);
  return `turn-${slug}-${now.toString(36)}${Math.floor(Math.random() * 1296)
    .toString(36)
    .padStart(2, '0')}`;
}

/** The typed client of Tollgate turns, over Temporal's client SDK. */
export class TollgateClient {
  constructor(
    readonly client: Client,
    readonly config: TollgateConfig,
    /** Decrypts what the client reads outside the SDK's own paths (heartbeat details of the live view). */
    private readonly codec?: PayloadCodec,
    /** Signs every decision this client sends (the config's `approvals.privateKeyEnv`). */
    private readonly signingKey?: ApproverSigningKey,
    /** Dates signatures (`signedAt`); turns check it against the server's clock, which a time-skipping test server moves ahead. */
    private readonly clock: () => number | Promise<number> = Date.now,
  ) {
    this.redactor = createRedactor(config.redact.patterns);
  }

  /** The config's redaction pass, for what this client writes where people see it (the turn's summary). */
  private readonly redactor: Redactor;

  /**
   * Connects to the configured server, encrypting payloads when the config names a keyring and
   * signing decisions when it names a private key.
   */
  static async connect(config: TollgateConfig, env: NodeJS.ProcessEnv = process.env): Promise<TollgateClient> {
    const signingKey = approverSigningKeyFromEnvironment(config.approvals.privateKeyEnv, env);
    const connection = await connectClient(config);
    const codec = codecFromEnvironment(config.encryption.keysEnv, env);
    const dataConverter = codec ? { payloadCodecs: [codec], ...ENCRYPTED_CONVERTER_PATHS } : undefined;
    const client = new Client({ connection, namespace: config.temporal.namespace, dataConverter });
    return new TollgateClient(client, config, codec, signingKey);
  }

  /** The name of the key this client signs decisions with, if it has one. */
  get signingKeyId(): string | undefined {
    return this.signingKey?.keyId;
  }

  /** Starts one turn; limits the input leaves out come from the worker's config, read by the turn itself. */
  async startTurn(
    input: AgentTurnInput,
    {
      workflowId = newTurnId(input.taskId),
      workflowTaskTimeout,
      eagerStart = false,
    }: {
      workflowId?: string;
      /**
       * Asks the server to hand the turn's first workflow task back with the start (Temporal's eager
       * workflow start), to a worker in this process: the client must be built on that worker's
       * NativeConnection (the SDK refuses otherwise). The server falls back to a normal start when it
       * cannot.
       */
      eagerStart?: boolean;
      /**
       * How long a worker may take over one workflow task before the server gives it to another
       * (Temporal's default, 10 s, when left out): how soon a turn goes on after its worker died mid-task.
       */
      workflowTaskTimeout?: Duration;
    } = {},
  ): Promise<TurnHandle> {
    const handle = await this.client.workflow.start<typeof agentTurn>(AGENT_TURN_WORKFLOW_TYPE, {
      workflowId,
      ...(workflowTaskTimeout === undefined ? {} : { workflowTaskTimeout }),
      ...(eagerStart ? { requestEagerStart: true } : {}),
      taskQueue: this.config.temporal.taskQueue,
      // The turn asks the worker's config for its limits; the input carries only the caller's own.
      args: [input],
      // Set here, the turn need not record an upsert for them (it still does for turns other clients start).
      typedSearchAttributes: [
        { key: TASK_ID_SEARCH_ATTRIBUTE, value: input.taskId },
        { key: AWAITING_APPROVAL_SEARCH_ATTRIBUTE, value: false },
        // The root of its own tree: `TollgateRootWorkflowId = '<id>'` lists it with every subagent's turn below it.
        { key: ROOT_WORKFLOW_ID_SEARCH_ATTRIBUTE, value: input.lineage?.rootWorkflowId ?? workflowId },
      ],
      // The Web UI's summary of the turn: the prompt's first line, through the same redaction as the worker's.
      staticSummary: this.redactor.text(firstLine(input.prompt)),
      staticDetails: [
        `**Task** \`${input.taskId}\``,
        ...(input.agent ? [`**Agent** ${this.redactor.text(input.agent)}`] : []),
        `**Model** ${typeof input.model === 'string' ? input.model : input.model ? 'scripted (given script)' : this.config.model.default}`,
        `**Tools** ${input.tools ? input.tools.join(', ') : 'all registered'}`,
      ].join('  \n'),
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
    return { workflowId, runId: handle.firstExecutionRunId };
  }

  /** Waits for a turn's result; `Output` types its agent's answer (`client.result<AgentOutput<typeof support>>(id)`). */
  async result<Output = unknown>(workflowId: string): Promise<AgentTurnResult<Output>> {
    return (await this.client.workflow.getHandle<typeof agentTurn>(workflowId).result()) as AgentTurnResult<Output>;
  }

  /** The turn's current state, from the `state` query. */
  async state(workflowId: string): Promise<TurnState> {
    return this.client.workflow.getHandle(workflowId).query(stateQuery);
  }

  /**
   * Follows a turn live until it ends: calls `onUpdate` whenever its phase, tool calls, approvals
   * or streamed model text change, and returns the result. The text comes from the running model
   * step's heartbeat details (see "Live view" in docs/watching.md), so following costs no history events.
   */
  async follow(
    workflowId: string,
    onUpdate: (view: LiveView) => void | Promise<void>,
    { intervalMs = 250 }: { intervalMs?: number } = {},
  ): Promise<AgentTurnResult> {
    const handle = this.client.workflow.getHandle(workflowId);
    let finished = false;
    const result = handle.result();
    // A handler is attached at once: a turn that fails while the first look is on the wire must
    // not end the process as an unhandled rejection.
    const settled = result.then(
      () => (finished = true),
      () => (finished = true),
    );
    let last = '';
    while (!finished) {
      const [state, description] = await Promise.all([handle.query(stateQuery), handle.describe()]);
      const modelActivity = description.raw.pendingActivities?.find((activity) => activity.activityType?.name === ACTIVITY_NAMES.modelStep);
      const encoded = modelActivity?.heartbeatDetails?.payloads?.[0];
      const payload = encoded && this.codec ? (await this.codec.decode([encoded as Payload]))[0] : encoded;
      const progress = payload ? (defaultPayloadConverter.fromPayload(payload as Payload) as StreamProgress | undefined) : undefined;
      const view: LiveView = { state, modelText: state.phase === 'model' ? (progress?.text ?? '') : '' };
      const key = JSON.stringify(view);
      if (key !== last) {
        last = key;
        await onUpdate(view);
      }
      await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, intervalMs))]);
    }
    const ended = await result;
    // One last look, so that what happened since the previous one is not missed.
    const finalView: LiveView = { state: await handle.query(stateQuery), modelText: '' };
    if (JSON.stringify(finalView) !== last) await onUpdate(finalView);
    return ended;
  }

  /**
   * Everything that waits for a person across all running turns: calls waiting for approval, writes
   * waiting for a resolution and model steps waiting for a resume decision, each with what it needs.
   * Found by `TollgateWaitingFor`.
   */
  async inbox(): Promise<InboxEntry[]> {
    const entries: InboxEntry[] = [];
    const waiting = `${WAITING_FOR_SEARCH_ATTRIBUTE.name} IN ('approval', 'resolution', 'resume')`;
    for await (const execution of this.client.workflow.list({
      query: `${waiting} AND ExecutionStatus = 'Running'`,
    })) {
      const state = await this.client.workflow.getHandle(execution.workflowId, execution.runId).query(stateQuery);
      const place = { workflowId: execution.workflowId, runId: execution.runId, taskId: state.taskId };
      // A subagent's wait carries its lineage; the request its parent made is shown through the same redaction as the prompt.
      const shown = <Pending extends { lineage?: WaitLineage }>(entry: Pending): Pending =>
        entry.lineage ? { ...entry, lineage: { ...entry.lineage, request: this.redactor.text(entry.lineage.request) } } : entry;
      for (const unshown of state.pendingApprovals) {
        const pending = shown(unshown);
        const round = pending.round > 1 ? { round: pending.round } : {};
        const json = { callId: pending.callId, decision: 'approve', argsDigest: pending.shownDigest ?? pending.argsDigest, ...round };
        entries.push({ kind: 'approval', ...place, ...pending, needs: { update: 'decide', signal: 'approval', json } });
      }
      for (const unshown of state.pendingResolutions ?? []) {
        const pending = shown(unshown);
        const round = pending.round > 1 ? { round: pending.round } : {};
        const json = {
          callId: pending.callId,
          outcome: 'applied | not_applied',
          argsDigest: pending.shownDigest ?? pending.argsDigest,
          ...round,
        };
        entries.push({ kind: 'resolution', ...place, ...pending, needs: { update: 'resolve', signal: 'resolve', json } });
      }
      const resume = state.pendingResume && shown(state.pendingResume);
      if (resume) {
        const json = { step: resume.step, decision: 'retry', ...(resume.round > 1 ? { round: resume.round } : {}) };
        entries.push({ kind: 'resume', ...place, ...resume, needs: { update: 'resume', signal: 'resume', json } });
      }
    }
    return entries;
  }

  /**
   * Says whether a write whose outcome is unknown took effect: `applied` settles it as a success,
   * `not_applied` lets it run again (an irreversible one after a new approval). Rejected at once
   * (WorkflowUpdateFailedError) when the call does not wait, or the digest differs.
   */
  async resolve(
    workflowId: string,
    callId: string,
    outcome: 'applied' | 'not_applied',
    { resolver, note, argsDigest, round: given }: ResolveOptions,
  ): Promise<ResolutionReceipt> {
    const handle = await this.runningHandle(workflowId, 'a resolution');
    const round = given ?? (await handle.query(stateQuery)).pendingResolutions?.find((entry) => entry.callId === callId)?.round;
    const resolution: ResolutionDecision = {
      callId,
      outcome,
      argsDigest,
      ...(resolver ? { resolver } : {}),
      ...(note ? { note } : {}),
      ...(round !== undefined && round > 1 ? { round } : {}),
    };
    if (!this.signingKey) return handle.executeUpdate(resolveUpdate, { args: [resolution] });
    const { keyId, privateKey } = this.signingKey;
    if (resolver !== undefined && resolver !== keyId) {
      throw new Error(
        `resolver "${resolver}" differs from the signing key "${keyId}" (approvals.privateKeyEnv): a signed resolution's resolver is its key's name`,
      );
    }
    const signedAt = new Date(await this.clock()).toISOString();
    const signature = signDecisionFields(
      { callId, decision: outcome, argsDigest, approver: keyId, signedAt, workflowId, round },
      privateKey,
    );
    return handle.executeUpdate(resolveUpdate, { args: [{ ...resolution, resolver: keyId, keyId, signedAt, signature }] });
  }

  /** The handle of a turn that still runs; a decision sent to an ended one is refused here. */
  private async runningHandle(workflowId: string, what: string) {
    const handle = this.client.workflow.getHandle(workflowId);
    const { status } = await handle.describe();
    if (status.name !== 'RUNNING')
      throw new TurnEndedError(`turn ${workflowId} has already ended (${status.name}); no call waits for ${what}`);
    return handle;
  }

  /**
   * Decides on a model step whose stream broke after chunks went out: `retry` asks the model again
   * for that step, `stop` ends the turn `model_failed`. Rejected at once (WorkflowUpdateFailedError)
   * when no step waits or `step` is another one.
   */
  async resume(workflowId: string, decision: ResumeDecision): Promise<ResumeReceipt> {
    const handle = this.client.workflow.getHandle(workflowId);
    const { status } = await handle.describe();
    if (status.name !== 'RUNNING')
      throw new TurnEndedError(`turn ${workflowId} has already ended (${status.name}); no model step waits for a resume decision`);
    const pending = (await handle.query(stateQuery)).pendingResume;
    const round = decision.round ?? (pending?.step === decision.step ? pending.round : undefined);
    const named: ResumeDecision = { ...decision, ...(round !== undefined && round > 1 ? { round } : {}) };
    if (!this.signingKey) return handle.executeUpdate(resumeUpdate, { args: [named] });
    const { keyId, privateKey } = this.signingKey;
    if (decision.by !== undefined && decision.by !== keyId) {
      throw new Error(
        `by "${decision.by}" differs from the signing key "${keyId}" (approvals.privateKeyEnv): a signed decision's decider is its key's name`,
      );
    }
    const signedAt = new Date(await this.clock()).toISOString();
    const fields = { ...resumeSigningSubject(decision.step), decision: decision.decision, approver: keyId, signedAt, workflowId, round };
    const signature = signDecisionFields(fields, privateKey);
    return handle.executeUpdate(resumeUpdate, { args: [{ ...named, by: keyId, keyId, signedAt, signature }] });
  }

  /** Approves one pending call; rejected at once (WorkflowUpdateFailedError) when the call is unknown, decided, or the digest differs. */
  async approve(workflowId: string, callId: string, options: DecisionOptions = {}): Promise<DecisionReceipt> {
    return this.decide(workflowId, { callId, decision: 'approve', ...options });
  }

  /** Denies one pending call; the call ends as `denied` and never runs. */
  async deny(workflowId: string, callId: string, options: DecisionOptions = {}): Promise<DecisionReceipt> {
    return this.decide(workflowId, { callId, decision: 'deny', ...options });
  }

  private async decide(workflowId: string, decision: ApprovalDecision): Promise<DecisionReceipt> {
    const handle = this.client.workflow.getHandle(workflowId);
    const { status } = await handle.describe();
    if (status.name !== 'RUNNING')
      throw new TurnEndedError(`turn ${workflowId} has already ended (${status.name}); no call waits for a decision`);
    if (decision.grant !== undefined) {
      const problem = grantRequestProblem(decision.grant);
      if (problem) throw new Error(problem);
    }
    const pending = (await handle.query(stateQuery)).pendingApprovals.find((entry) => entry.callId === decision.callId);
    const round = decision.round ?? pending?.round;
    const named: ApprovalDecision = { ...decision, ...(round !== undefined && round > 1 ? { round } : {}) };
    if (!this.signingKey) return handle.executeUpdate(decideUpdate, { args: [named] });
    const signedAt = new Date(await this.clock()).toISOString();
    // An edit's signature covers the digest of the edited arguments, computed as the worker computes it.
    const editedArgsDigest = decision.args !== undefined ? approvalDigest(decision.args, pending?.definitionDigest) : undefined;
    return handle.executeUpdate(decideUpdate, { args: [this.signed(workflowId, named, this.signingKey, signedAt, editedArgsDigest)] });
  }

  /** The decision signed with this client's key, for this turn and this moment. */
  private signed(
    workflowId: string,
    decision: ApprovalDecision,
    key: ApproverSigningKey,
    signedAt: string,
    editedArgsDigest?: string,
  ): ApprovalDecision {
    const { keyId, privateKey } = key;
    if (decision.approver !== undefined && decision.approver !== keyId) {
      const rule = "a signed decision's approver is its key's name";
      throw new Error(`approver "${decision.approver}" differs from the signing key "${keyId}" (approvals.privateKeyEnv): ${rule}`);
    }
    // The signature vouches for the arguments the person saw, so it is never made over a digest fetched here.
    const { callId, decision: verdict, argsDigest } = decision;
    if (argsDigest === undefined) {
      throw new Error(`argsDigest is required to sign a decision on call ${callId}: give the digest of the arguments you decide on`);
    }
    const fields = {
      callId,
      decision: verdict,
      argsDigest,
      approver: keyId,
      signedAt,
      workflowId,
      ...(editedArgsDigest ? { editedArgsDigest } : {}),
      ...(decision.round !== undefined ? { round: decision.round } : {}),
      ...(decision.grant !== undefined ? { grant: canonicalJson(decision.grant) } : {}),
    };
    const signature = signDecisionFields(fields, privateKey);
    return { ...decision, approver: keyId, argsDigest, keyId, signedAt, signature };
  }

  /**
   * The input a turn was started with (its first history event, decoded as the worker decodes it),
   * with its prompt through this client's redaction, as it may be shown to a person; undefined when
   * the turn or its input cannot be read.
   */
  async turnInput(workflowId: string, runId?: string): Promise<AgentTurnInput | undefined> {
    const { namespace } = this.config.temporal;
    const page = await this.client.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution: { workflowId, ...(runId ? { runId } : {}) },
      maximumPageSize: 1,
    });
    const encoded = page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!encoded) return undefined;
    const payload = this.codec ? (await this.codec.decode([encoded as Payload]))[0] : encoded;
    const input = defaultPayloadConverter.fromPayload(payload as Payload) as AgentTurnInput | undefined;
    if (!input || typeof input !== 'object' || typeof input.prompt !== 'string') return undefined;
    return { ...input, prompt: this.redactor.text(input.prompt) };
  }

  /** The Web UI page of a turn (its timeline, where the activity summaries show), when the UI's address is known. */
  uiLink(uiUrl: string, { workflowId, runId }: TurnHandle): string {
    return `${uiUrl}/namespaces/${encodeURIComponent(this.config.temporal.namespace)}/workflows/${encodeURIComponent(workflowId)}/${runId}`;
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    await this.client.connection.close();
  }
}
