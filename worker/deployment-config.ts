import { z } from 'zod';

/** A Worker Deployment's name or a build id: the characters Temporal takes in both, and its bound on their length. */
const deploymentPart = z
  .string()
  .regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/, 'expected 1–255 letters, digits, "_", "-" or "." (not first)');

/**
 * How a worker joins Temporal's Worker Deployments: each build is a version of the deployment, a
 * turn is pinned to the build that started it, and a new build takes new turns once it is current
 * (docs/operations.md, "Deploying a new worker").
 */
export const deploymentSchema = z.strictObject({
  /** The Worker Deployment this worker belongs to; by default the task queue's name (`tollgate`). */
  name: deploymentPart.optional(),
  /** This worker's build; by default derived from the content of its workflow bundle, so the same code is the same build. */
  buildId: deploymentPart.optional(),
  /** `false`: an unversioned worker, which takes every turn on its task queue whatever build started it. */
  versioning: z.boolean().default(true),
  /**
   * When a new build becomes current: `auto` makes it current as it starts on a dev server (the
   * server keeps its state in SQLite) and leaves it to `tollgate deploy promote` elsewhere;
   * `on-start` always makes it current as it starts; `manual` never does.
   */
  makeCurrent: z.enum(['auto', 'on-start', 'manual'], { error: 'expected "auto", "on-start" or "manual"' }).default('auto'),
});
