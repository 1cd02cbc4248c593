// The Tollgate config of the peer benchmark: one task queue per variant, the example corpus, a
// workspace and store of its own, and the loopback model server as the `loopback` model.
import path from 'node:path';
import type { TollgateConfig } from '../config/config-schema';
import { parseConfig, PROJECT_ROOT } from '../config/load-config';

/** The corpus every variant of the peer benchmark searches and reads. */
export const PLAN_CORPUS = path.join(PROJECT_ROOT, 'examples', 'corpus');

/** The model name the peer benchmark's turns ask for. */
export const PLAN_MODEL = 'loopback';

/** The same loopback model with `stream: false`: the whole reply at once, as the peers ask for it. */
export const PLAN_MODEL_WHOLE = 'loopback-whole';

/** A Tollgate config for the peer benchmark's Tollgate variant. */
export function planConfig({
  folder,
  address,
  taskQueue,
  baseURL,
}: {
  folder: string;
  address: string;
  taskQueue: string;
  baseURL: string;
}): TollgateConfig {
  return parseConfig(
    {
      temporal: { address, taskQueue },
      workspace: path.join(folder, 'workspace'),
      store: { sqliteFile: path.join(folder, 'intents.db') },
      corpus: PLAN_CORPUS,
      model: {
        models: {
          scripted: { provider: 'scripted' },
          [PLAN_MODEL]: { provider: 'openai-compatible', model: 'scripted', baseURL },
          [PLAN_MODEL_WHOLE]: { provider: 'openai-compatible', model: 'scripted', baseURL, stream: false },
        },
      },
    },
    { source: 'bench', baseDir: PROJECT_ROOT, env: {} },
  );
}
