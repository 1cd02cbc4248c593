import { mcpToolSource } from './mcp/mcp-tool-source';
import { openapiToolSource } from './openapi/openapi-tool-source';
import type { ToolSource } from './tool-source';

/** The tool sources a worker opens when `createWorker` is given none; each reads its own section of the config. */
export function configuredToolSources(): ToolSource[] {
  return [mcpToolSource(), openapiToolSource()];
}
