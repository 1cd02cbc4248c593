import type { z } from 'zod';
import { mcpSection } from './mcp/mcp-config';
import { openapiSection } from './openapi/openapi-config';
import type { ToolSourceSection } from './tool-source';

/**
 * The config sections of the tool sources Tollgate ships, each a key of the config file. Only
 * schemas live here (no source's code), so reading a config loads no client of any server.
 */
export const TOOL_SOURCE_SECTIONS = [mcpSection, openapiSection] as const;

type Sections = (typeof TOOL_SOURCE_SECTIONS)[number];

/** The sections as keys of the config's schema, each filled with its defaults when the file leaves it out. */
export type ToolSourceSectionsShape = { [S in Sections as S['key']]: z.ZodPrefault<S['schema']> };

/** The shape `configSchema` takes the tool sources' sections in. */
export function toolSourceSectionsShape(): ToolSourceSectionsShape {
  return Object.fromEntries(
    (TOOL_SOURCE_SECTIONS as readonly ToolSourceSection[]).map((section) => [section.key, section.schema.prefault({})]),
  ) as ToolSourceSectionsShape;
}

/** Resolves every tool source section's relative paths against the config file's folder. */
export function resolveToolSourcePaths(config: object, resolve: (relative: string) => string): void {
  for (const section of TOOL_SOURCE_SECTIONS as readonly ToolSourceSection[]) {
    section.resolvePaths?.((config as Record<string, unknown>)[section.key], resolve);
  }
}
