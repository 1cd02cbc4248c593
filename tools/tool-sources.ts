import { mcpSection, type McpConfig } from './mcp/mcp-config';
import type { ToolSource } from './tool-source';

/**
 * The MCP source as the config opens it: its clients (the MCP SDK, the schema validators) load when
 * it opens, so a worker or a command that serves no MCP server never loads them.
 */
function configuredMcpSource(): ToolSource<McpConfig> {
  return {
    name: 'mcp',
    section: mcpSection,
    async open(context) {
      if (Object.keys(context.section.servers).length === 0) return { tools: [], close: async () => undefined };
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { mcpToolSource } = require('./mcp/mcp-tool-source') as typeof import('./mcp/mcp-tool-source');
      return mcpToolSource().open(context);
    },
  };
}

/** The tool sources a worker opens when `createWorker` is given none; each reads its own section of the config. */
export function configuredToolSources(): ToolSource[] {
  return [configuredMcpSource()];
}
