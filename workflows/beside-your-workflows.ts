// The entry of a workflow bundle that holds your workflows beside Tollgate's (TollgatePlugin): webpack
// resolves the module name below to your `workflowsPath`, by an alias the plugin sets as it bundles.
// @ts-expect-error -- not a module the compiler can see: the bundler's alias names your workflows' file.
import * as yours from '__tollgate_your_workflows__';
import * as tollgate from './tollgate-workflows';

// @ts-expect-error -- the same alias as above.
export * from '__tollgate_your_workflows__';
export * from './tollgate-workflows';

// A workflow of yours under one of Tollgate's names would take the place of Tollgate's (or the other
// way round) without a word: the bundle refuses to load instead, naming it. Re-exporting Tollgate's own is fine.
const clashes = Object.keys(tollgate).filter(
  (name) =>
    name in (yours as Record<string, unknown>) && (yours as Record<string, unknown>)[name] !== (tollgate as Record<string, unknown>)[name],
);
if (clashes.length > 0) {
  throw new Error(`TollgatePlugin: your workflows export ${clashes.join(', ')}, a name Tollgate's workflows take; rename yours`);
}
