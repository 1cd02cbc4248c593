import type { z } from 'zod';
import { ConfigError } from '../config/config-error';
import type { TollgateConfig } from '../config/config-schema';
import type { ToolDefinition } from './define-tool';
import { TollgateError } from '../common/tollgate-error';

/**
 * A config section a tool source reads: its key in the config file and its schema. A section left
 * out of the file is parsed from `{}`, so each of its keys has a default or is optional.
 */
export interface ToolSourceSection<Key extends string = string, Schema extends z.ZodType = z.ZodType> {
  /** The section's key in the config file (`mcp`). */
  readonly key: Key;
  readonly schema: Schema;
  /** Resolves the section's relative paths against the config file's folder, in place, as the loader does for the config's own folders. */
  resolvePaths?(section: z.output<Schema>, resolve: (relative: string) => string): void;
}

/** What a tool source is opened with. */
export interface ToolSourceContext<Section = unknown> {
  config: TollgateConfig;
  /** The source's own config section, validated and with its defaults; undefined for a source that declares none. */
  section: Section;
  /** Where the source writes its lines (a server's stderr, reconnects); each line is redacted before it reaches the worker's log. */
  log: (line: string) => void;
  /** The environment the source reads variables from (the names its section gives). */
  env: NodeJS.ProcessEnv;
}

/** An open source: its tools and how to close what it opened. */
export interface OpenToolSource {
  /** Its tools as the registry takes them; each handler calls the source, and every call passes the same boundary as any tool's. */
  tools: ToolDefinition[];
  /** Closes what the source opened (connections, processes); called once, when the worker has stopped. */
  close(): Promise<void>;
}

/**
 * Tools that are not written with `defineTool` (an MCP server's, say): opened when the worker
 * starts, their tools served next to the others, closed when the worker stops.
 */
export interface ToolSource<Section = unknown> {
  /** Names the source in errors (`mcp`). */
  readonly name: string;
  /** The config section the source reads, when it reads one; `open` gets it as `context.section`. */
  readonly section?: ToolSourceSection<string, z.ZodType<Section>>;
  /** Opens the source and lists its tools; an error here stops the worker before it serves anything. */
  open(context: ToolSourceContext<Section>): Promise<OpenToolSource>;
}

/** A source that could not open; its message names the source and what was wrong, in one line. */
export class ToolSourceError extends TollgateError {
  static override readonly marker = 'tollgate.error.ToolSourceError';
  override name = 'ToolSourceError';
}

function firstLine(error: unknown): string {
  return error instanceof Error ? error.message.split('\n')[0] : String(error);
}

/** A source's section of the config: as the config holds it, or its defaults when the config's schema has no such key. */
function sectionOf<Section>(config: TollgateConfig, section: ToolSourceSection<string, z.ZodType<Section>>): Section {
  const value = (config as unknown as Record<string, unknown>)[section.key];
  if (value !== undefined) return value as Section;
  const parsed = section.schema.safeParse({});
  if (!parsed.success) throw new ConfigError(`config ${section.key}: the section has keys without a default, so it cannot be left out`);
  return parsed.data;
}

/**
 * Opens every source (side by side) and gives their tools together. A source that cannot open
 * closes the ones that did and stops here: its own error when it names itself (a `ToolSourceError`
 * or a `ConfigError`), else one line naming the source and the cause.
 */
export async function openToolSources(
  sources: readonly ToolSource[],
  { config, log, env = process.env }: { config: TollgateConfig; log: (line: string) => void; env?: NodeJS.ProcessEnv },
): Promise<OpenToolSource> {
  const opening = sources.map(async (source) => {
    try {
      const section = source.section ? sectionOf(config, source.section) : undefined;
      return await source.open({ config, section, log, env });
    } catch (error) {
      if (ToolSourceError.isInstance(error) || ConfigError.isInstance(error)) throw error;
      throw new ToolSourceError(`tool source "${source.name}" could not open: ${firstLine(error)}`, { cause: error });
    }
  });
  const opened = await Promise.allSettled(opening);
  const open = opened.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  const close = async () => {
    for (const source of open.reverse()) await source.close();
  };
  const failed = opened.find((outcome) => outcome.status === 'rejected');
  if (failed) {
    await close().catch(() => undefined);
    throw failed.reason;
  }
  return { tools: open.flatMap((source) => source.tools), close };
}
