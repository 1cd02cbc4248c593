import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import { PROJECT_ROOT } from '../../config/load-config';

/**
 * Where the recorded histories of the scenarios live; the replay test replays every file there.
 * The tests that run them write them again with TOLLGATE_RECORD_HISTORIES=1.
 */
export const HISTORY_FOLDER = path.join(PROJECT_ROOT, 'test', 'histories');

/** The built-in plan's turn, approval included (the end-to-end test). */
export const RECORDED_HISTORY = path.join(HISTORY_FOLDER, 'agent-turn-built-in-plan.json');

/** A turn through the openai-compatible provider, followed live (the end-to-end test). */
export const RECORDED_PROVIDER_HISTORY = path.join(HISTORY_FOLDER, 'agent-turn-openai-compatible.json');

/** A conversation sent three messages at once: its turns ran one after another. */
export const CONCURRENT_SENDS_SERIAL_HISTORY = path.join(HISTORY_FOLDER, 'conversation', 'concurrent-sends-serial.json');

/** A reversible write whose first execution failed: the second round sleeps the backoff first and looks up after. */
export const REVERSIBLE_RETRY_HISTORY = path.join(HISTORY_FOLDER, 'reversible-write-retried.json');

/** A turn whose model stream broke after three chunks and was asked again on a person's `resume` decision. */
export const RESUMED_STREAM_HISTORY = path.join(HISTORY_FOLDER, 'interrupted-stream-resumed.json');

/** A turn whose irreversible call waited for approval with `TollgateWaitingFor` set and cleared. */
export const WAITING_FOR_APPROVAL_HISTORY = path.join(HISTORY_FOLDER, 'approval-waiting-for.json');

/**
 * A turn (a read, a reversible write with its status lookup) and a conversation (an update, a child
 * turn, a signal) recorded by a worker that traced them with Temporal's OpenTelemetry 1.x
 * interceptors (SDK 1.24.0): kept as recorded, no test writes them again.
 */
export const TRACED_HISTORY_FOLDER = path.join(HISTORY_FOLDER, 'traced');

/**
 * With TOLLGATE_RECORD_HISTORIES=1, keeps a history for the replay test, without the failures'
 * stack traces (they name the worker's files); otherwise does nothing.
 */
export function keepHistory(file: string, history: temporal.api.history.v1.IHistory): void {
  if (process.env.TOLLGATE_RECORD_HISTORIES !== '1') return;
  const json = historyToJSON(history).replace(/"stackTrace":\s*"(?:[^"\\]|\\.)*"/g, '"stackTrace":""');
  writeFileSync(file, `${JSON.stringify(JSON.parse(json), null, 2)}\n`);
}
