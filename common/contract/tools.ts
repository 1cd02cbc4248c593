import type { ErrorCode, ToolCallStatus, ToolEffect, TurnStatus } from '../codes';

/** The normalized result of one tool call, as the model sees it. */
export interface ToolResult {
  status: ToolCallStatus;
  /** The tool's output on success (after truncation and redaction). */
  data?: unknown;
  code?: ErrorCode;
  retryable?: boolean;
  /** The tool's own short message on failure; never a stack trace. */
  message?: string;
  /** When a person approved the call with edited arguments: who, and the arguments it ran with (as they may be shown). */
  edited?: { by?: string; args: unknown; message: string };
  /** When the call repeats one whose effect already took place in the task: that call, and that it was not run again (this is its result). */
  repeated?: { of: string; message: string };
}

/** The record of one tool call, for people and programs inspecting a turn. */
export interface ToolEvent {
  callId: string;
  step: number;
  tool: string;
  effect: ToolEffect | 'unknown';
  status: ToolCallStatus;
  code?: ErrorCode;
  /** How many times the handler really ran (0 when the boundary refused the call, or a receipt answered it). */
  executions: number;
  durationMs: number;
  /** Characters of output before truncation. */
  originalSize: number;
  truncated: boolean;
  /** When a person approved the call with edited arguments: the digest of those shown, of those it ran with, and who edited. */
  edit?: CallEdit;
  /** Irreversible writes: who decided on the call, and how (a person, a rule, or a grant a person gave). */
  approval?: ApprovalRecord;
  /** Writes: the call this one repeated (the same intent, already applied in the task), answered from that call's receipt; nothing ran and nobody was asked. */
  repeatOf?: string;
  /** A delegate call (a subagent run as a child turn): the agent, the child's workflow id and how it ended. */
  delegate?: DelegateRecord;
}

/**
 * How a delegate call's child turn ended: its turn status, or `failed`, `cancelled`, `terminated`,
 * `timed_out` when the child workflow itself did not complete, `refused` when it was never started.
 */
export type DelegateStatus = TurnStatus | 'failed' | 'cancelled' | 'terminated' | 'timed_out' | 'refused';

/** What a delegate call's ToolEvent records of its child turn. */
export interface DelegateRecord {
  agent: string;
  workflowId: string;
  status: DelegateStatus;
}

/** Who decided on an irreversible call: `by` is a person's (or key's) name, `rule:<name>` or `grant:<id>`. */
export interface ApprovalRecord {
  decision: 'approve' | 'deny';
  by: string;
  via: 'person' | 'rule' | 'grant';
  /** A decision by a stand-in: the approver who named them, in whose place they decided. */
  for?: string;
}

/** An approval with edited arguments, as its event records it. */
export interface CallEdit {
  originalDigest: string;
  editedDigest: string;
  editor?: string;
}

/** A tool call the model asked for. */
export interface ToolCallRequest {
  callId: string;
  tool: string;
  /** In a turn's messages, large arguments of a call that ran are an `ArgumentsReference` (common/call-arguments.ts). */
  args: unknown;
}

/** One tool as the worker that would run it declares it: what a person deciding on a call of it is shown. */
export interface ToolDescription {
  name: string;
  description: string;
  effect: ToolEffect;
  /** The effect in words (`irreversible write`). */
  effectLabel: string;
  timeoutMs: number;
  maxAttempts: number;
  maxOutputChars: number;
  approvalTimeoutMs: number;
  /** The model-visible JSON Schema of the arguments: what an edit is checked against. */
  jsonSchema: unknown;
  /** The digest of the policy the worker runs calls of it under (a pending approval names the one it was checked against). */
  policyDigest: string;
  /** A tool a source describes (an MCP server's): its name and the digest of its definition. */
  source?: { name: string; definitionDigest: string };
  /** Who may decide on its calls (config `approvals.groups`); left out when anyone may. */
  approvers?: string[];
}

/** What the `toolCatalogue` workflow returns: every tool a worker serves, and whether its decisions must be signed. */
export interface ToolCatalogue {
  tools: ToolDescription[];
  /** The names of the approver keys decisions must be signed with; left out when the worker takes unsigned decisions. */
  approverKeys?: string[];
}
