import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { canonicalJson } from '../canonical-json';
import { ToolOutcome } from '../tool-outcome';

/** How much of an embedded resource's text, or of an error's text, reaches the result. */
export const MCP_RESULT_LIMITS = { resourceTextChars: 2_000, errorChars: 500 } as const;

type Content = CallToolResult['content'][number];

/** Bytes a base64 text decodes to, without decoding it. */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** A content item that is not text, as a short summary: binary data is never passed on, only its type and size. */
function summarize(item: Exclude<Content, { type: 'text' }>): Record<string, unknown> {
  switch (item.type) {
    case 'image':
    case 'audio':
      return { type: item.type, mimeType: item.mimeType, bytes: base64Bytes(item.data) };
    case 'resource_link':
      return { type: item.type, uri: item.uri, name: item.name, mimeType: item.mimeType };
    case 'resource': {
      const { resource } = item;
      if ('text' in resource && typeof resource.text === 'string') {
        const text = resource.text;
        const limit = MCP_RESULT_LIMITS.resourceTextChars;
        const cut = text.length > limit;
        const shown = cut ? { text: text.slice(0, limit), chars: text.length } : { text };
        return { type: 'resource', uri: resource.uri, mimeType: resource.mimeType, ...shown };
      }
      const blob = String((resource as { blob?: string }).blob ?? '');
      return { type: 'resource', uri: resource.uri, mimeType: resource.mimeType, bytes: base64Bytes(blob) };
    }
    default:
      return { type: (item as { type: string }).type };
  }
}

/** Whether the text is only the structured content serialized (as servers send it for older clients). */
function repeats(text: string, structured: unknown): boolean {
  if (structured === undefined) return false;
  try {
    return canonicalJson(JSON.parse(text)) === canonicalJson(structured);
  } catch {
    return false;
  }
}

/**
 * An MCP tool result as a handler outcome. `isError: true` is a failure (`tool_failure`) by the
 * flag alone, never by its text. Text (and structured content) become the data; images, audio
 * and resources are summarized. A result of text alone is that text.
 */
export function mcpResultOutcome(result: CallToolResult): ToolOutcome {
  const content = result.content ?? [];
  const text = content
    .filter((item): item is Extract<Content, { type: 'text' }> => item.type === 'text')
    .map((item) => item.text)
    .join('\n');
  if (result.isError === true) {
    const message = text.trim() || 'the tool reported an error without a message';
    const limit = MCP_RESULT_LIMITS.errorChars;
    return ToolOutcome.error(message.length > limit ? `${message.slice(0, limit - 1)}…` : message);
  }
  const attachments = content.filter((item): item is Exclude<Content, { type: 'text' }> => item.type !== 'text').map(summarize);
  if (result.structuredContent === undefined && attachments.length === 0) return ToolOutcome.ok(text);
  return ToolOutcome.ok({
    ...(text && !repeats(text, result.structuredContent) ? { text } : {}),
    ...(result.structuredContent === undefined ? {} : { structuredContent: result.structuredContent }),
    ...(attachments.length > 0 ? { attachments } : {}),
  });
}
