// tollgate/testing: test your own tools and turns on Temporal's time-skipping server, with a scripted model and counted executions.
// Every name here is part of the public contract (docs/testing.md).

/** Starts a server, a worker with your tools and the scripted model; returns the helpers (run, approve, skip, executions…). */
export {
  createTestEnvironment,
  KIT_MODEL,
  waitForState,
  type KitDecisionOptions,
  type KitResolveOptions,
  type TestEnvironment,
  type TestEnvironmentOptions,
  type TestTurn,
  type TurnOptions,
} from './environment';
/** Script builders: tool calls, text, and provider faults (429 with Retry-After, 5xx, a stream cut, malformed tool-call JSON). */
export { script, type ScriptStep } from './script';
/** The step-by-step comparison of a script with what the turn did, and the error that shows it. */
export { expectScriptFollowed, formatScriptReport, ScriptNotFollowedError, type ScriptReport, type StepReport } from './script-check';
/** A config with every default and fresh temporary folders, for tests that build workers by hand. */
export { testConfig } from './config';

/** The `round` a decision names for a wait it decides on (from a wait's second round on). */
export { roundOf } from './round-of';
/** The servers alone: the time-skipping test server and the dev server from the installed binaries, and the bundled workflows. */
export { bundleWorkflows, quietRuntime, startDevServerEnvironment, startTimeSkippingServer } from './servers';
/** A loopback model provider answering from queued replies in OpenAI's and Anthropic's streaming formats. */
export {
  anthropicStream,
  openaiReply,
  openaiStream,
  startFakeProvider,
  type FakeProvider,
  type FakeReply,
  type FakeRequest,
} from './fake-provider';
