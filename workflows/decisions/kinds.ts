import { APPROVAL } from './approval';
import type { DecisionKind, Kind } from './desk';
import { RESOLUTION } from './resolution';
import { RESUME } from './resume';

/** Every kind of wait for a person, by its `TollgateWaitingFor` value: a kind in `WAITING_KINDS` does not compile until it is declared here. */
export const DECISION_KINDS: { [K in Kind]: DecisionKind<K> } = { approval: APPROVAL, resolution: RESOLUTION, resume: RESUME };
