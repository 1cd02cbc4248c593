import path from 'node:path';
import { PROJECT_ROOT } from '../../config/load-config';

/** The stored history the replay test replays; the end-to-end test rewrites it when TOLLGATE_RECORD_HISTORIES=1. */
export const RECORDED_HISTORY = path.join(PROJECT_ROOT, 'test', 'histories', 'agent-turn-built-in-plan.json');
