import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AgentTurnInput } from '../../common/contract/turn';
import type { McpConfigInput } from '../../tools/mcp/mcp-config';

/** What `npm run demo -- --mcp` runs: the filesystem MCP server on a folder of the workspace, and the turn's script. */
export interface McpDemo {
  folder: string;
  mcp: McpConfigInput;
  prompt: string;
  model: AgentTurnInput['model'];
}

const REPLY = '# Reply\n\nAnnual plans are refunded pro rata after 30 days.\n';

/** The filesystem server's program, from the project's dev dependencies; a clear error when it is not installed. */
function filesystemServer(): string {
  try {
    return require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
  } catch {
    throw new Error('--mcp needs @modelcontextprotocol/server-filesystem (a dev dependency): run npm install');
  }
}

/**
 * The MCP demo: `<workspace>/mcp-files` holds a note, the filesystem server (trusted, so its
 * read-only tools are reads) serves that folder only, and the scripted model lists the folder,
 * reads the note without approval, then writes a reply, which waits for approval.
 */
export function mcpDemo(workspace: string): McpDemo {
  const folder = path.join(workspace, 'mcp-files');
  mkdirSync(folder, { recursive: true });
  const note = path.join(folder, 'note.md');
  writeFileSync(note, '# Note\n\nThe customer asks whether annual plans can be refunded after 30 days.\n');
  const reply = path.join(folder, 'reply.md');
  return {
    folder,
    mcp: { servers: { files: { command: process.execPath, args: [filesystemServer(), folder], trustAnnotations: true } } },
    prompt: 'Read the note in the shared folder and write a reply next to it.',
    model: {
      provider: 'scripted',
      script: [
        { toolCalls: [{ tool: 'files__list_directory', args: { path: folder } }] },
        { toolCalls: [{ tool: 'files__read_text_file', args: { path: note } }] },
        { toolCalls: [{ tool: 'files__write_file', args: { path: reply, content: REPLY } }] },
        { text: `Read note.md through the filesystem MCP server and wrote reply.md in ${folder}.` },
      ],
    },
  };
}
