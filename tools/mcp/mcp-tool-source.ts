import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { isWriteEffect, type EffectWithoutStatusCheck } from '../../common/effects';
import { parseConfigSection } from '../../config/config-error';
import { mcpSection, type McpConfig, type McpConfigInput, type McpServerConfig } from './mcp-config';
import { canonicalJson, sha256 } from '../canonical-json';
import type { ToolContext, ToolDefinition } from '../define-tool';
import { sourceToolPolicy } from '../tool-config';
import { ToolError } from '../tool-error';
import { ToolSourceError, type OpenToolSource, type ToolSource } from '../tool-source';
import { AnswerLostError, NotSentError } from '../call-errors';
import { McpListingBoundError } from './mcp-call-errors';
import { isServerAnswer, McpConnection, type McpLog } from './mcp-connection';
import { jsonSchemaInput } from '../json-schema/json-schema-input';
import { compileOutsideSchema, type CheckedSchema } from '../json-schema/outside-schema';
import { mcpResultOutcome } from './mcp-result';
import { sourceToolName } from '../source-tool-name';

/** The tools of a worker's MCP servers, and the connections behind them (`close` ends stdio servers' processes). */
export type McpToolSource = OpenToolSource;

/** How much longer than the boundary's own timeout the SDK waits, so the boundary always cuts a call off first. */
const SDK_TIMEOUT_MARGIN_MS = 5_000;

/** The digest of what the model and an approver see of a tool: its name, description, input schema and annotations. */
export function mcpDefinitionDigest(name: string, tool: Tool): string {
  const shown = { name, description: tool.description ?? '', inputSchema: tool.inputSchema, annotations: tool.annotations ?? {} };
  return sha256(canonicalJson(shown));
}

/**
 * A tool's effect: the config's override; else, from a trusted server, `read` for
 * `readOnlyHint: true` and `irreversible_write` for anything else; else `irreversible_write`.
 * An MCP tool has no status check, so it is never a `reversible_write`, and `idempotentHint`
 * does not make a write retried (see docs/mcp.md).
 */
export function mcpToolEffect(tool: Tool, server: McpServerConfig): EffectWithoutStatusCheck {
  const override = server.tools[tool.name]?.effect;
  if (override) return override;
  if (server.trustAnnotations && tool.annotations?.readOnlyHint === true) return 'read';
  return 'irreversible_write';
}

/** Whether the config serves a server's tool: in `include` (when given), not in `exclude`, not disabled. */
function served(tool: string, server: McpServerConfig): boolean {
  if (server.include && !server.include.includes(tool)) return false;
  return !server.exclude.includes(tool) && server.tools[tool]?.enabled !== false;
}

/** Config keys naming tools the server does not list: each is an error naming the key. */
function checkNamedTools(name: string, server: McpServerConfig, listed: Tool[]): void {
  const known = new Set(listed.map((tool) => tool.name));
  const named = [
    ...(server.include ?? []).map((tool) => [`include`, tool] as const),
    ...server.exclude.map((tool) => [`exclude`, tool] as const),
    ...Object.keys(server.tools).map((tool) => [`tools.${tool}`, tool] as const),
  ];
  for (const [key, tool] of named) {
    if (known.has(tool)) continue;
    throw new Error(`config mcp.servers.${name}.${key}: the server has no tool named "${tool}" (it has: ${[...known].join(', ')})`);
  }
}

/** The current definitions of one server's tools, by their name on the server, refreshed when the server's list changes. */
class ServedDefinitions {
  private current = new Map<string, string>();
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly connection: McpConnection,
    private readonly exposed: Map<string, string>,
  ) {}

  set(tools: Tool[]): void {
    const servedNow = tools.filter((tool) => this.exposed.has(tool.name));
    this.current = new Map(servedNow.map((tool) => [tool.name, mcpDefinitionDigest(this.exposed.get(tool.name)!, tool)]));
  }

  /** Lists the tools again; a failure leaves the last known list. */
  refresh(): Promise<void> {
    this.refreshing ??= this.connection
      .listTools()
      .then((tools) => this.set(tools))
      .catch(() => undefined)
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** The digest of the tool as the server now declares it (listing again first when `fresh`, ended by `signal`), or undefined when it is gone. */
  async digest(tool: string, { fresh, signal }: { fresh: boolean; signal: AbortSignal }): Promise<string | undefined> {
    if (fresh) this.set(await this.connection.listTools({ signal }));
    else await this.refreshing;
    return this.current.get(tool);
  }
}

/**
 * Turns a failed call into what the boundary needs, by what is known of it: never sent, a
 * transient failure; answered with the server's own error, a refusal (ToolError `tool_failure`,
 * which releases a write's intent); anything after the request went out, a lost answer: a read is
 * a transient failure, retried within its bound, and a write is thrown as it is, which the boundary
 * takes as cut off mid-way (`outcome_unknown`, the intent kept, never run again by itself).
 */
function callFailure(error: unknown, { server, tool, write }: { server: string; tool: string; write: boolean }): Error {
  const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
  if (NotSentError.isInstance(error)) return new ToolError(`${detail}`, 'transient_failure');
  if (isServerAnswer(error)) return new ToolError(`mcp server "${server}" refused ${tool}: ${detail}`, 'tool_failure');
  if (!write) {
    const message = AnswerLostError.isInstance(error) ? detail : `mcp server "${server}" was lost during ${tool}: ${detail}`;
    return new ToolError(message, 'transient_failure');
  }
  return AnswerLostError.isInstance(error) ? error : new AnswerLostError(`mcp server "${server}" was lost during ${tool}: ${detail}`);
}

/** A listing before a call that failed: the call was not sent, so it is a transient failure (or the server's refusal of the listing). */
function listingFailure(error: unknown, { server, tool }: { server: string; tool: string }): Error {
  const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
  if (isServerAnswer(error))
    return new ToolError(`mcp server "${server}" refused to list its tools before ${tool}: ${detail}`, 'tool_failure');
  if (NotSentError.isInstance(error)) return new ToolError(detail, 'transient_failure');
  return new ToolError(`${tool} was not run: listing the tools of mcp server "${server}" failed: ${detail}`, 'transient_failure');
}

/**
 * What a tool with an `outputSchema` must answer (unless `isError`): structured content that fits
 * it. The server has acted by then, so an answer that does not is a lost answer, not a refusal.
 */
function checkStructuredContent(
  result: CallToolResult,
  output: CheckedSchema | undefined,
  { server, tool }: { server: string; tool: string },
): void {
  if (!output || result.isError === true) return;
  const where = `mcp server "${server}" ran ${tool} but its answer`;
  if (result.structuredContent === undefined)
    throw new AnswerLostError(`${where} has no structured content, which its output schema requires`);
  const outcome = output.check(result.structuredContent);
  if (outcome.valid) return;
  const problem = outcome.problems[0];
  throw new AnswerLostError(`${where} breaks its output schema: ${problem.instancePath || '(structured content)'} ${problem.message}`);
}

/** One server tool as a registry entry: policy from config and annotations, input checked by its JSON Schema. */
function toolDefinition({
  name,
  server,
  tool,
  connection,
  definitions,
}: {
  name: string;
  server: string;
  tool: Tool;
  connection: McpConnection;
  definitions: ServedDefinitions;
}): ToolDefinition {
  const config = connection.config.tools[tool.name] ?? {};
  const effect = mcpToolEffect(tool, connection.config);
  const definitionDigest = mcpDefinitionDigest(name, tool);
  const policy = sourceToolPolicy(config);
  const { timeoutMs } = policy;
  let input;
  let output: CheckedSchema | undefined;
  try {
    input = jsonSchemaInput(tool.inputSchema);
  } catch (error) {
    throw new Error(`mcp server "${server}": tool "${tool.name}": ${(error as Error).message}`, { cause: error });
  }
  try {
    output = tool.outputSchema === undefined ? undefined : compileOutsideSchema(tool.outputSchema);
  } catch (error) {
    throw new Error(`mcp server "${server}": tool "${tool.name}": the output schema: ${(error as Error).message}`, { cause: error });
  }
  const handler = async (args: unknown, context: ToolContext) => {
    const write = isWriteEffect(effect);
    // A write lists the tools again before it runs; a read relies on the list kept current by the server's notifications.
    const now = await definitions.digest(tool.name, { fresh: write, signal: context.signal }).catch((error: unknown) => {
      throw listingFailure(error, { server, tool: tool.name });
    });
    if (now !== definitionDigest) {
      const change = now === undefined ? 'no longer lists it' : `now declares another definition (digest ${now.slice(0, 12)})`;
      const checked = definitionDigest.slice(0, 12);
      const message = `mcp server "${server}" ${change} than the one this call was checked against (${checked}); it is not run`;
      throw new ToolError(message, 'forbidden');
    }
    try {
      const result = await connection.callTool(tool.name, args, { signal: context.signal, timeoutMs: timeoutMs + SDK_TIMEOUT_MARGIN_MS });
      checkStructuredContent(result, output, { server, tool: tool.name });
      return mcpResultOutcome(result);
    } catch (error) {
      throw callFailure(error, { server, tool: tool.name, write });
    }
  };
  return {
    name,
    description: tool.description ?? tool.title ?? `${tool.name} from the MCP server ${server}`,
    input,
    effect,
    ...policy,
    source: { name: 'mcp', jsonSchema: tool.inputSchema, definitionDigest },
    handler,
  };
}

/** Connects to one server and turns its served tools into registry entries. */
async function serverTools(
  name: string,
  server: McpServerConfig,
  log: McpLog,
  env: NodeJS.ProcessEnv,
): Promise<{ connection: McpConnection; tools: ToolDefinition[] }> {
  const connection = new McpConnection(name, server, log, env);
  try {
    await connection.start();
    const listed = await connection.listTools();
    checkNamedTools(name, server, listed);
    const chosen = listed.filter((tool) => served(tool.name, server));
    const exposed = new Map(chosen.map((tool) => [tool.name, sourceToolName(name, tool.name)]));
    const definitions = new ServedDefinitions(connection, exposed);
    definitions.set(chosen);
    connection.onToolsChanged(() => void definitions.refresh());
    const tools = chosen.map((tool) => toolDefinition({ name: exposed.get(tool.name)!, server: name, tool, connection, definitions }));
    return { connection, tools };
  } catch (error) {
    await connection.close();
    throw error;
  }
}

/**
 * Starts one client per configured MCP server and lists their tools, named `<server>__<tool>`.
 * A server that cannot start stops here with a one-line error naming it and the cause, unless it
 * is `optional`: then it is logged and its tools are left out.
 */
export async function startMcpTools({
  mcp,
  log = (line) => console.warn(line),
  env = process.env,
}: {
  mcp: McpConfig;
  log?: McpLog;
  /** Where `headersFromEnv` values are read. */
  env?: NodeJS.ProcessEnv;
}): Promise<McpToolSource> {
  const entries = Object.entries(mcp.servers);
  const started = await Promise.allSettled(entries.map(([name, server]) => serverTools(name, server, log, env)));
  const connections = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value.connection] : []));
  const close = async () => {
    await Promise.all(connections.map((connection) => connection.close()));
  };
  const tools: ToolDefinition[] = [];
  try {
    for (const [index, outcome] of started.entries()) {
      const [name, server] = entries[index];
      if (outcome.status === 'fulfilled') {
        tools.push(...outcome.value.tools);
        continue;
      }
      const cause = outcome.reason instanceof Error ? outcome.reason.message.split('\n')[0] : String(outcome.reason);
      if (cause.startsWith('config mcp.')) throw new ToolSourceError(cause);
      const reason = McpListingBoundError.isInstance(outcome.reason)
        ? `it ${cause.slice(`mcp server "${name}" `.length)}`
        : cause.replace(/^mcp server "[^"]*"(:| could not connect:) /, '');
      const line = `mcp server "${name}" could not start: ${reason}`;
      if (!server.optional) throw new ToolSourceError(line);
      log(`${line}; it is optional, so its tools are left out`);
    }
    const names = new Map<string, string>();
    for (const tool of tools) {
      if (!names.has(tool.name)) {
        names.set(tool.name, tool.name);
        continue;
      }
      throw new ToolSourceError(`mcp: two tools would both be named "${tool.name}"; rename a server in mcp.servers or exclude one of them`);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { tools, close };
}

/**
 * MCP servers as a tool source: the servers of the config's `mcp` section, or the ones given here
 * in its shape (which then replace the section's). Opening starts one client per server, as
 * `startMcpTools` does; closing ends them.
 */
export function mcpToolSource(mcp?: McpConfigInput): ToolSource<McpConfig> {
  return {
    name: 'mcp',
    section: mcpSection,
    async open({ section, log, env }) {
      const servers = mcp === undefined ? section : parseConfigSection(mcpSection, mcp, 'mcpToolSource()');
      return startMcpTools({ mcp: servers, log, env });
    },
  };
}
