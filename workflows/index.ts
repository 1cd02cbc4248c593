// `tollgate/workflows`: Tollgate's workflows and their messages, for a bundle or a client of your own,
// and `executeAgent`, to run an agent from a workflow of your own. A worker registers the workflows of
// `tollgate-workflows.ts`, not this module, so the helper never becomes a workflow type.
export * from './tollgate-workflows';
export { executeAgent, type ExecuteAgentInput, type ExecuteAgentOptions } from './execute-agent';
