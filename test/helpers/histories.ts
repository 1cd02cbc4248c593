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
