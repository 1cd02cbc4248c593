import type { ToolResult } from '../../common/types';

/** One write intent as the store knows it. */
export interface IntentRecord {
  key: string;
  taskId: string;
  tool: string;
  callId: string;
  /** `started` is written before the side effect, `committed` with its receipt after it. */
  state: 'started' | 'committed';
  receipt?: ToolResult;
  startedAt: string;
  committedAt?: string;
}

/** Where write intents are recorded durably, so that no retry and no repeat writes twice. */
export interface IdempotencyStore {
  get(key: string): Promise<IntentRecord | undefined>;
  /** Records that the side effect is about to happen. */
  markStarted(record: { key: string; taskId: string; tool: string; callId: string }): Promise<void>;
  /** Records that it happened, with the result the model saw. */
  markCommitted(key: string, receipt: ToolResult): Promise<void>;
  /** Forgets a started intent whose tool said, definitely, that it did nothing. */
  forget(key: string): Promise<void>;
  close(): Promise<void>;
}

/** A stored row, as both stores keep it. */
export interface IntentRow {
  key: string;
  task_id: string;
  tool: string;
  call_id: string;
  state: 'started' | 'committed';
  receipt: string | null;
  started_at: string;
  committed_at: string | null;
}

/** The columns of the intents table, the same in both stores. */
export const INTENT_COLUMNS_SQL = `key TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('started', 'committed')),
    receipt TEXT,
    started_at TEXT NOT NULL,
    committed_at TEXT`;

/** A row as the record the boundary reads. */
export function recordFromRow(row: IntentRow | undefined): IntentRecord | undefined {
  return (
    row && {
      key: row.key,
      taskId: row.task_id,
      tool: row.tool,
      callId: row.call_id,
      state: row.state,
      receipt: row.receipt ? (JSON.parse(row.receipt) as ToolResult) : undefined,
      startedAt: row.started_at,
      committedAt: row.committed_at ?? undefined,
    }
  );
}
