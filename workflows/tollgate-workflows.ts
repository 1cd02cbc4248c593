import type { VersioningBehavior } from '@temporalio/common';
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { agentTurn } from './agent-turn';
import { conversation } from './conversation';
import { toolCatalogue } from './tool-catalogue';

/**
 * The versioning behavior of a workflow run by a versioned worker (one of a Worker Deployment);
 * none on an unversioned worker, such as a worker of your own with `TollgatePlugin`, whose server
 * refuses a behavior from a worker that has no deployment version.
 */
function whenVersioned(versioningBehavior: VersioningBehavior) {
  // An unversioned worker still reports a build id (derived from its bundle), with no deployment name.
  return () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior } : {});
}

// A turn finishes on the build that started it: a person's approval, given hours later, is taken by
// the code (and the tool policies) the turn was shown under. A conversation is pinned too and moves
// to a newer build only where it continues as new.
setWorkflowOptions(whenVersioned('PINNED'), agentTurn);
setWorkflowOptions(whenVersioned('PINNED'), conversation);
// The catalogue asks the build that takes new work now: the tools the next call would run under.
setWorkflowOptions(whenVersioned('AUTO_UPGRADE'), toolCatalogue);

export { agentTurn, conversation, toolCatalogue };
export { approvalSignal, closeConversationSignal, decideUpdate, historyQuery, sendUpdate, stateQuery } from './messages';
