// The public shapes of an agent that every side reads: the settings a model step is called with,
// how a turn and its result name an agent, and the type of an agent's typed output.

/** Sampling settings an agent's model steps pass to the AI SDK's call options; anything left out is the provider's default. */
export interface ModelSettings {
  temperature?: number;
  topP?: number;
  topK?: number;
  /** The most tokens one model step may write (overrides the model entry's `maxOutputTokens`). */
  maxOutputTokens?: number;
  seed?: number;
  stopSequences?: string[];
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** Options in the provider's own namespace (`{ openai: { … } }`), passed as they are. */
  providerOptions?: Record<string, Record<string, unknown>>;
}

/** Which agent ran a turn: its name and the digest of its definition, as recorded in the turn's settings. */
export interface AgentReference {
  name: string;
  /** SHA-256 of the agent's canonical definition; a worker declaring the agent differently refuses its steps and calls. */
  digest: string;
}

/** The type of an agent's typed final answer: `AgentOutput<typeof support>` (unknown for an agent without `output`). */
export type AgentOutput<Agent> = Agent extends { readonly outputType?: infer Output } ? Output : unknown;

/** A turn's tool list narrowed to its agent's (either left out: the other; both: the tools in both, in the turn's order). */
export function narrowTools(turn: string[] | undefined, agent: string[] | undefined): string[] | undefined {
  if (!agent) return turn;
  if (!turn) return [...agent];
  return turn.filter((tool) => agent.includes(tool));
}
