import { z } from 'zod';

/** The `workspace` key: the folder the workspace tools write and read in (resolved against the config file's folder). */
export const workspaceSchema = z.string().default('.tollgate/workspace');

/** The `corpus` key: the folder of markdown documents the read tools search (resolved against the config file's folder). */
export const corpusSchema = z.string().default('examples/corpus');
