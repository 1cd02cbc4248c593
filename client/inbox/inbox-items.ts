// What the web inbox lists: everything that waits for a person across running turns (found by
// `TollgateWaitingFor`), each with what a person needs to decide, and the waits that ended since
// someone last looked (decided elsewhere, by whom). One look is shared by every page that watches.
import type { PendingApproval, PendingResolution, PendingResume, WaitLineage } from '../../common/contract/decisions';
import type { ToolCatalogue, ToolDescription } from '../../common/contract/tools';
import type { TurnState } from '../../common/contract/turn';
import { askToolCatalogue } from '../ask-tool-catalogue';
import { displayValue, editableJson, HIDDEN_CHARACTER_PATTERN, hiddenWarning, type ValueDisplay } from '../../common/display-text';
import { WAITING_FOR_SEARCH_ATTRIBUTE } from '../../common/search-attributes';
import type { TollgateConfig } from '../../config/config-schema';
import { createRedactor, type Redactor } from '../../hardened/redact';
import { stateQuery } from '../../workflows/messages';
import type { TollgateClient } from '../tollgate-client';

/** Who decided, as the page names them: a stand-in with the approver they decided for. */
function standInName(record: { by: string; for?: string }): string {
  return record.for ? `${record.by} for ${record.for}` : record.by;
}

/** The turn an item belongs to, as the page shows it. */
export interface TurnSummary {
  workflowId: string;
  runId: string;
  taskId: string;
  prompt: string;
  /** The model's text so far (for a resume: with the text that streamed before the cut). */
  modelText: string;
  /** The turn in the Temporal Web UI. */
  webUiLink: string;
  /** The irreversible calls of the turn decided so far: by a person, a rule (`rule:<name>`) or a grant (`grant:<id>`). */
  decided: Array<{ callId: string; tool: string; decision: 'approve' | 'deny'; by: string }>;
  /** The agent that runs the turn, as its settings recorded it (left out for the default agent). */
  agent?: TurnState['agent'];
  /** A subagent's turn: where it stands in its tree (the request its parent made, redacted); decisions go to this turn. */
  lineage?: WaitLineage;
}

/**
 * A call's arguments as the page shows them, by the rules every surface shares
 * (`common/display-text.ts`): the page renders `root` part by part and computes the digest over the
 * value those parts stand for, so what it approves is exactly what it rendered.
 */
export interface ArgumentsDisplay extends ValueDisplay {
  /** The warning shown with the item when the arguments hold hidden characters. */
  warning?: string;
  /** The arguments as JSON to edit, hidden characters written as JSON escapes. */
  editText: string;
}

/** One thing that waits for a person. */
export type InboxItem =
  | {
      id: string;
      kind: 'approval';
      turn: TurnSummary;
      pending: PendingApproval;
      display: ArgumentsDisplay;
      tool?: ToolDescription;
      toolChanged?: boolean;
    }
  | { id: string; kind: 'resolution'; turn: TurnSummary; pending: PendingResolution; display: ArgumentsDisplay; tool?: ToolDescription }
  | { id: string; kind: 'resume'; turn: TurnSummary; pending: PendingResume };

/** A subagent's turn's place in its tree, as every one of its waits carries it, with its parent's request redacted. */
function lineageOf(state: TurnState, redactor: Redactor): { lineage?: WaitLineage } {
  const waits = [...state.pendingApprovals, ...(state.pendingResolutions ?? []), ...(state.pendingResume ? [state.pendingResume] : [])];
  const lineage = waits.find((pending) => pending.lineage)?.lineage;
  return lineage ? { lineage: { ...lineage, request: redactor.text(lineage.request) } } : {};
}

/** A waiting entry with its lineage as the page is sent it: the request redacted, as the turn's. */
function withLineage<Pending extends { lineage?: WaitLineage }>(pending: Pending, turn: TurnSummary): Pending {
  return pending.lineage && turn.lineage ? { ...pending, lineage: turn.lineage } : pending;
}

/** The arguments of a waiting call as the page shows them. */
export function argumentsDisplay(args: unknown): ArgumentsDisplay {
  const display = displayValue(args);
  const warning = hiddenWarning(display.hidden);
  return { ...display, ...(warning ? { warning } : {}), editText: editableJson(args) };
}

/** A wait that ended since it was listed: decided here or elsewhere, by whom, or ended with its turn. */
export interface TakenItem {
  id: string;
  kind: InboxItem['kind'];
  workflowId: string;
  subject: string;
  /** `approve`, `deny`, `applied`, `not_applied`, `retry`, `stop`, or `ended` when the turn ended without a decision. */
  outcome: string;
  by?: string;
  at: string;
}

/** What the page is sent: the items, the waits that ended lately, and whether the turns take unsigned decisions. */
export interface InboxSnapshot {
  items: InboxItem[];
  taken: TakenItem[];
  /** The approver key names the workers require; none: decisions need no signature (anyone who reaches Temporal may decide). */
  approverKeys: string[] | null;
  /** The characters the page marks in any text it shows (a regular expression's source, flags `gu`): the rule every surface shares. */
  hiddenPattern: string;
  at: string;
  /** Why the last look failed (the list shown is the one before it). */
  problem?: string;
}

/** How long an ended wait stays listed as taken. */
const TAKEN_KEPT_MS = 10 * 60 * 1000;
/** How often the tool catalogue may be asked again when an item names a policy it does not know. */
const CATALOGUE_REFRESH_MS = 30_000;

function itemId(kind: string, workflowId: string, subject: string, round: number): string {
  return `${kind}:${workflowId}:${subject}:${round}`;
}

/** The inbox's view of the waiting turns, looked up while someone watches. */
export class InboxItems {
  private last: InboxSnapshot = {
    items: [],
    taken: [],
    approverKeys: null,
    hiddenPattern: HIDDEN_CHARACTER_PATTERN,
    at: new Date(0).toISOString(),
  };
  private readonly watchers = new Set<(snapshot: InboxSnapshot) => void>();
  private timer?: NodeJS.Timeout;
  private looking?: Promise<InboxSnapshot>;
  private catalogue?: { value: ToolCatalogue; at: number };
  private readonly redactor: Redactor;
  private readonly prompts = new Map<string, string>();
  private closed = false;
  private readonly stopping = new AbortController();

  constructor(private readonly options: { client: TollgateClient; config: TollgateConfig; pollMs: number; webUiUrl: string }) {
    this.redactor = createRedactor(options.config.redact.patterns);
  }

  /** The items now (a fresh look). */
  async snapshot(): Promise<InboxSnapshot> {
    return this.look();
  }

  /** Calls `send` with the items now and whenever they change; returns how to stop. */
  watch(send: (snapshot: InboxSnapshot) => void): () => void {
    this.watchers.add(send);
    void this.look().then(send, () => undefined);
    this.schedule();
    return () => {
      this.watchers.delete(send);
      if (this.watchers.size === 0 && this.timer) clearTimeout(this.timer);
    };
  }

  /** Looks again soon (after a decision), rather than at the next interval. */
  refreshSoon(): void {
    if (this.watchers.size > 0) this.schedule(50);
  }

  /**
   * Stops looking: the look under way is aborted and waited for, so that no call of it (nor a retry
   * the client scheduled) is still pending when the caller closes the connection under it.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.watchers.clear();
    this.stopping.abort();
    await this.looking?.catch(() => undefined);
  }

  private schedule(delayMs = this.options.pollMs): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.closed || this.watchers.size === 0) return;
    this.timer = setTimeout(async () => {
      const before = JSON.stringify({ items: this.last.items, taken: this.last.taken, keys: this.last.approverKeys });
      const now = await this.look().catch(() => this.last);
      const after = JSON.stringify({ items: now.items, taken: now.taken, keys: now.approverKeys });
      if (after !== before || now.problem) for (const send of this.watchers) send(now);
      this.schedule();
    }, delayMs);
    this.timer.unref();
  }

  /** One look at the waiting turns; concurrent callers share it. */
  private look(): Promise<InboxSnapshot> {
    if (this.closed) return Promise.resolve(this.last);
    const { client } = this.options.client;
    this.looking ??= client.withAbortSignal(this.stopping.signal, () => this.lookNow()).finally(() => (this.looking = undefined));
    return this.looking;
  }

  private async lookNow(): Promise<InboxSnapshot> {
    const { client } = this.options;
    try {
      const items: InboxItem[] = [];
      const query = `${WAITING_FOR_SEARCH_ATTRIBUTE.name} IN ('approval', 'resolution', 'resume') AND ExecutionStatus = 'Running'`;
      for await (const execution of client.client.workflow.list({ query })) {
        const handle = client.client.workflow.getHandle(execution.workflowId, execution.runId);
        const state = await handle.query(stateQuery).catch(() => undefined);
        if (state) items.push(...(await this.itemsOf(execution.workflowId, execution.runId, state)));
      }
      const catalogue = await this.toolCatalogue(false).catch(() => undefined);
      const taken = await this.takenSince(items);
      this.last = {
        items,
        taken,
        approverKeys: catalogue ? (catalogue.approverKeys ?? null) : this.last.approverKeys,
        hiddenPattern: HIDDEN_CHARACTER_PATTERN,
        at: new Date().toISOString(),
      };
      return this.last;
    } catch (error) {
      this.last = { ...this.last, problem: `the waiting turns could not be listed: ${(error as Error).message.split('\n')[0]}` };
      return this.last;
    }
  }

  /** A turn's prompt, redacted, read once per run (a run's input never changes). */
  private async promptOf(workflowId: string, runId: string): Promise<string> {
    const key = `${workflowId}/${runId}`;
    let prompt = this.prompts.get(key);
    if (prompt === undefined) {
      prompt = (await this.options.client.turnInput(workflowId, runId).catch(() => undefined))?.prompt ?? '';
      this.prompts.set(key, prompt);
      // Only the turns listed lately are remembered.
      if (this.prompts.size > 1_000) this.prompts.delete(this.prompts.keys().next().value!);
    }
    return prompt;
  }

  private async itemsOf(workflowId: string, runId: string, state: TurnState): Promise<InboxItem[]> {
    const turn: TurnSummary = {
      workflowId,
      runId,
      taskId: state.taskId,
      prompt: await this.promptOf(workflowId, runId),
      modelText: this.redactor.text(state.modelText ?? ''),
      ...(state.agent ? { agent: state.agent } : {}),
      ...lineageOf(state, this.redactor),
      decided: state.toolCalls.flatMap((event) =>
        event.approval
          ? [{ callId: event.callId, tool: event.tool, decision: event.approval.decision, by: standInName(event.approval) }]
          : [],
      ),
      webUiLink: `${this.options.webUiUrl}/namespaces/${encodeURIComponent(this.options.config.temporal.namespace)}/workflows/${encodeURIComponent(workflowId)}/${encodeURIComponent(runId)}`,
    };
    const items: InboxItem[] = [];
    for (const pending of state.pendingApprovals) {
      const tool = await this.toolFor(pending.tool, pending.policyDigest);
      items.push({
        id: itemId('approval', workflowId, pending.callId, pending.round),
        kind: 'approval',
        turn,
        pending: withLineage(pending, turn),
        display: argumentsDisplay(pending.args),
        ...(tool ? { tool: tool.description } : {}),
        ...(tool?.changed ? { toolChanged: true } : {}),
      });
    }
    for (const pending of state.pendingResolutions ?? []) {
      const tool = await this.toolFor(pending.tool, undefined);
      items.push({
        id: itemId('resolution', workflowId, pending.callId, pending.round),
        kind: 'resolution',
        turn,
        pending: withLineage(pending, turn),
        display: argumentsDisplay(pending.args),
        ...(tool ? { tool: tool.description } : {}),
      });
    }
    if (state.pendingResume) {
      const pending = state.pendingResume;
      items.push({
        id: itemId('resume', workflowId, `step-${pending.step}`, pending.round),
        kind: 'resume',
        turn,
        pending: withLineage(pending, turn),
      });
    }
    return items;
  }

  /** The tool as the workers declare it now, and whether that is another declaration than the call was checked against. */
  private async toolFor(
    name: string,
    policyDigest: string | undefined,
  ): Promise<{ description: ToolDescription; changed: boolean } | undefined> {
    let catalogue = await this.toolCatalogue(false).catch(() => undefined);
    let description = catalogue?.tools.find((tool) => tool.name === name);
    if (policyDigest && description?.policyDigest !== policyDigest) {
      catalogue = await this.toolCatalogue(true).catch(() => catalogue);
      description = catalogue?.tools.find((tool) => tool.name === name);
    }
    if (!description) return undefined;
    return { description, changed: policyDigest !== undefined && description.policyDigest !== policyDigest };
  }

  /** The tools the task queue's workers serve (the `toolCatalogue` workflow), asked again at most every 30 s when `fresh`. */
  private async toolCatalogue(fresh: boolean): Promise<ToolCatalogue> {
    const known = this.catalogue;
    if (known && (!fresh || Date.now() - known.at < CATALOGUE_REFRESH_MS)) return known.value;
    const value = await askToolCatalogue(this.options.client.client, this.options.config.temporal.taskQueue);
    this.catalogue = { value, at: Date.now() };
    return this.catalogue.value;
  }

  /** The waits listed before that are gone now: how each ended, from its turn's state. */
  private async takenSince(items: InboxItem[]): Promise<TakenItem[]> {
    const now = Date.now();
    const current = new Set(items.map((item) => item.id));
    const kept = this.last.taken.filter((taken) => now - Date.parse(taken.at) < TAKEN_KEPT_MS && !current.has(taken.id));
    const gone = this.last.items.filter((item) => !current.has(item.id) && !kept.some((taken) => taken.id === item.id));
    for (const item of gone) kept.push(await this.howEnded(item));
    return kept;
  }

  private async howEnded(item: InboxItem): Promise<TakenItem> {
    const base = { id: item.id, kind: item.kind, workflowId: item.turn.workflowId, at: new Date().toISOString() };
    const handle = this.options.client.client.workflow.getHandle(item.turn.workflowId, item.turn.runId);
    const state = await handle.query(stateQuery).catch(() => undefined);
    if (item.kind === 'approval') {
      const decision = state?.decisions.filter((entry) => entry.callId === item.pending.callId).at(-1);
      return {
        ...base,
        subject: item.pending.callId,
        outcome: decision?.decision ?? 'ended',
        ...(decision?.approver ? { by: decision.for ? `${decision.approver} for ${decision.for}` : decision.approver } : {}),
      };
    }
    if (item.kind === 'resolution') {
      const resolution = state?.resolutions?.filter((entry) => entry.callId === item.pending.callId).at(-1);
      return {
        ...base,
        subject: item.pending.callId,
        outcome: resolution?.outcome ?? 'ended',
        ...(resolution?.resolver ? { by: resolution.for ? `${resolution.resolver} for ${resolution.for}` : resolution.resolver } : {}),
      };
    }
    const interruption = state?.modelInterruptions.filter((entry) => entry.step === item.pending.step).at(-1);
    return {
      ...base,
      subject: `step ${item.pending.step + 1}`,
      outcome: interruption?.decision ?? 'ended',
      ...(interruption?.by ? { by: interruption.by } : {}),
    };
  }
}
