// The peer worker runs on Node 24, while the tool handlers it shares with the other variants are the
// project's, whose native better-sqlite3 (the search index) is built for the project's Node. This
// module sends that one package to this folder's own copy, built by Node 24 when setup installs
// these packages. It must be the worker's first import, before anything loads the handlers.
import nodeModule, { createRequire } from 'node:module';

type ResolveFilename = (request: string, ...rest: unknown[]) => string;
const loader = nodeModule as unknown as { _resolveFilename: ResolveFilename };
const ownRequire = createRequire(__filename);
/** Each package that must come from this folder, resolved here once, before the loader is wrapped. */
const OWN_ADDONS = new Map(['better-sqlite3'].map((name) => [name, ownRequire.resolve(name)]));
const resolveFilename = loader._resolveFilename;
if (typeof resolveFilename !== 'function') throw new Error(`bench/peers: this Node (${process.version}) has no Module._resolveFilename`);
loader._resolveFilename = function resolveOwnAddons(this: unknown, request: string, ...rest: unknown[]): string {
  return OWN_ADDONS.get(request) ?? resolveFilename.call(this, request, ...rest);
};
