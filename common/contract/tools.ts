import type { ErrorCode, ToolCallStatus, ToolEffect } from '../codes';

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
