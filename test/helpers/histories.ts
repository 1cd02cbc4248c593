import path from 'node:path';
import { PROJECT_ROOT } from '../../config/load-config';

/** Where the recorded histories of the end-to-end scenarios live; the replay test replays every file there. */
export const HISTORY_FOLDER = path.join(PROJECT_ROOT, 'test', 'histories');

/** The built-in plan's turn, approval included; the end-to-end test rewrites it when TOLLGATE_RECORD_HISTORIES=1. */
export const RECORDED_HISTORY = path.join(HISTORY_FOLDER, 'agent-turn-built-in-plan.json');

/** A turn through the openai-compatible provider, followed live; rewritten likewise. */
export const RECORDED_PROVIDER_HISTORY = path.join(HISTORY_FOLDER, 'agent-turn-openai-compatible.json');

/**
 * The built-in plan's turn recorded before the status lookup became a local activity (patch
 * `status-lookup-local-activity`): turns started before that change must still replay.
 */
export const PRE_PATCH_HISTORY = path.join(HISTORY_FOLDER, 'agent-turn-built-in-plan-lookup-as-activity.json');

/**
 * A conversation sent three messages at once, recorded before the `send` mutex (patch
 * `conversation-serial-sends`): its three turns started together and must still replay that way.
 */
export const CONCURRENT_SENDS_BEFORE_PATCH_HISTORY = path.join(HISTORY_FOLDER, 'conversation', 'concurrent-sends-before-serial-patch.json');

/** The same three sends recorded after the patch: the turns ran one after another. */
export const CONCURRENT_SENDS_SERIAL_HISTORY = path.join(HISTORY_FOLDER, 'conversation', 'concurrent-sends-serial.json');

/**
 * A reversible write whose first execution failed, recorded before patch `lookup-after-backoff`:
 * its second round looked the status up, then slept the backoff, then ran again.
 */
export const REVERSIBLE_RETRY_BEFORE_PATCH_HISTORY = path.join(HISTORY_FOLDER, 'reversible-write-retried-before-backoff-patch.json');

/** The same turn recorded after the patch: the second round sleeps the backoff first and looks up after. */
export const REVERSIBLE_RETRY_HISTORY = path.join(HISTORY_FOLDER, 'reversible-write-retried.json');

/**
 * A turn through the openai provider that saved two drafts of ~3,000 characters, recorded while
 * a turn still sent every earlier call's arguments whole to each model step: it must replay on
 * code that sends them by reference (activity inputs are not compared on replay).
 */
export const ARGUMENTS_INLINE_HISTORY = path.join(HISTORY_FOLDER, 'large-draft-arguments-inline.json');

/** A turn whose model stream broke after three chunks and was asked again on a person's `resume` decision; rewritten likewise. */
export const RESUMED_STREAM_HISTORY = path.join(HISTORY_FOLDER, 'interrupted-stream-resumed.json');

/** A turn whose irreversible call waited for approval with `TollgateWaitingFor` set and cleared; rewritten likewise. */
export const WAITING_FOR_APPROVAL_HISTORY = path.join(HISTORY_FOLDER, 'approval-waiting-for.json');
