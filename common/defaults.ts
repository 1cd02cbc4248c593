/** Built-in turn limits, used when neither the turn's input nor the config sets them. */
export const DEFAULT_TURN_LIMITS = { maxSteps: 10, maxToolCalls: 20, errorBudget: 3, deadlineMs: 3_600_000 } as const;

/** The task queue of the public contract. */
export const DEFAULT_TASK_QUEUE = 'tollgate';

/** The workflow type of the public contract. */
export const AGENT_TURN_WORKFLOW_TYPE = 'agentTurn';
