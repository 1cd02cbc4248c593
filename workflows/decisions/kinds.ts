import { APPROVAL } from './approval';
import type { WaitingKind } from '../../common/search-attributes';
import type { DecisionKind } from './desk';
import { RESOLUTION } from './resolution';
import { RESUME } from './resume';

/** Every kind of wait for a person, by its `TollgateWaitingFor` value: a kind in `WAITING_KINDS` does not compile until `DecisionKinds` names its shapes and it is declared here. */
export const DECISION_KINDS: { [K in WaitingKind]: DecisionKind<K> } = { approval: APPROVAL, resolution: RESOLUTION, resume: RESUME };
