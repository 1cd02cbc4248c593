import { z } from 'zod';
import { EFFECTS_WITHOUT_STATUS_CHECK } from '../../common/effects';
import { duration, envName, httpUrl } from '../../config/schema-parts';
import { toolPolicyOverrideShape } from '../tool-config';
import type { ToolSourceSection } from '../tool-source';

/** Overrides of one MCP tool's policy, by the tool's name on its server (config `mcp.servers.<name>.tools.<tool>`). */
export const mcpToolOverrideSchema = z.strictObject({
  ...toolPolicyOverrideShape,
  /** Wins over the server's annotations; an effect that needs a status check (`reversible_write`) is refused, since an MCP tool has none. */
  effect: z.enum(EFFECTS_WITHOUT_STATUS_CHECK).optional(),
});

const STDIO_ONLY = ['command', 'args', 'env', 'cwd'] as const;
const HTTP_ONLY = ['url', 'headersFromEnv'] as const;

/** The bounds of what one MCP server may send: bytes per message, pages and tools per listing. */
export const MCP_SERVER_DEFAULTS = { maxResponseBytes: 4 * 1024 * 1024, maxListPages: 100, maxTools: 1_000 } as const;

/** One MCP server: `command` (a child process spoken to over stdio) or `url` (Streamable HTTP). */
export const mcpServerSchema = z
  .strictObject({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    /** Variables for the server's process, on top of a minimal environment (never the worker's whole environment). */
    env: z.record(envName, z.string()).optional(),
    cwd: z.string().optional(),
    url: httpUrl.optional(),
    /** Header name -> the environment variable holding its value, so a token stays out of the config. */
    headersFromEnv: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'expected an HTTP header name'), envName).optional(),
    /** Whether the server's tool annotations decide effects (default false: every tool is an irreversible write). */
    trustAnnotations: z.boolean().default(false),
    /** When true, a server that cannot start is logged and its tools are left out instead of stopping the worker. */
    optional: z.boolean().default(false),
    /** Only these tools (names on the server) are served; all when left out. */
    include: z.array(z.string().min(1)).optional(),
    /** These tools are never served. */
    exclude: z.array(z.string().min(1)).default([]),
    tools: z.record(z.string(), mcpToolOverrideSchema).default({}),
    /** How long starting, connecting and listing the tools may take; one deadline for the whole `tools/list`, every page. */
    connectTimeout: duration.default('30s'),
    /** The most bytes one message from the server may have (an HTTP body, a stdio line); a longer answer is cut off while read. */
    maxResponseBytes: z.number().int().min(1024).default(MCP_SERVER_DEFAULTS.maxResponseBytes),
    /** The most pages one `tools/list` may take. */
    maxListPages: z.number().int().min(1).default(MCP_SERVER_DEFAULTS.maxListPages),
    /** The most tools one `tools/list` may give. */
    maxTools: z.number().int().min(1).default(MCP_SERVER_DEFAULTS.maxTools),
  })
  .superRefine((server, context) => {
    if ((server.command === undefined) === (server.url === undefined)) {
      context.addIssue({ code: 'custom', message: 'give exactly one of command (stdio) or url (Streamable HTTP)' });
      return;
    }
    const foreign = server.url === undefined ? HTTP_ONLY : STDIO_ONLY;
    for (const key of foreign) {
      if (server[key] !== undefined)
        context.addIssue({
          code: 'custom',
          path: [key],
          message: `${key} belongs to ${server.url === undefined ? 'a Streamable HTTP' : 'a stdio'} server, and this one has ${server.url === undefined ? 'a command' : 'a url'}`,
        });
    }
  });

/** One configured MCP server. */
export type McpServerConfig = z.output<typeof mcpServerSchema>;

/** The `mcp` section: MCP servers whose tools the worker serves as `<server>__<tool>`. */
export const mcpSchema = z.strictObject({
  servers: z.record(z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'expected 1-32 letters, digits, _ or -'), mcpServerSchema).default({}),
});

/** The validated `mcp` section. */
export type McpConfig = z.output<typeof mcpSchema>;

/** The `mcp` section as written (defaults left out), as `mcpToolSource()` takes it. */
export type McpConfigInput = z.input<typeof mcpSchema>;

/** The MCP tool source's section of the config file, `mcp:`; a server's relative `cwd` is resolved against the file's folder. */
export const mcpSection = {
  key: 'mcp',
  schema: mcpSchema,
  resolvePaths(mcp: McpConfig, resolve: (relative: string) => string) {
    for (const server of Object.values(mcp.servers)) if (server.cwd !== undefined) server.cwd = resolve(server.cwd);
  },
} as const satisfies ToolSourceSection<'mcp', typeof mcpSchema>;
