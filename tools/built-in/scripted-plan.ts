import type { TurnMessage } from '../../common/contract/conversation';
import type { ToolResult } from '../../common/contract/tools';
import type { ScriptStep } from '../../common/contract/turn';
import { taskSlug } from '../intent-key';
import type { SearchMatch } from './search-local-sources';

/** What a model step asks for before the boundary checks it. */
export interface ModelReply {
  text?: string;
  toolCalls: Array<{ tool: string; args: unknown }>;
}

const STOP_WORDS = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'by',
  'do',
  'for',
  'from',
  'how',
  'i',
  'in',
  'is',
  'it',
  'of',
  'on',
  'or',
  'our',
  'the',
  'to',
  'we',
  'what',
  'when',
  'which',
  'who',
  'with',
  'you',
]);

/** The meaningful words of a query, lower-cased, without stop words. */
export function queryWords(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'-]*/gu) ?? [];
  return [...new Set(words.filter((word) => word.length > 1 && !STOP_WORDS.has(word)))];
}

/** A word cut to a stem that also begins its other forms: `releases` → `releas`, `allowed` → `allow`. */
export function wordStem(word: string): string {
  return word.length > 4 ? word.replace(/(ing|ed|es|s)$/, '') : word;
}

const DOCUMENTS_TO_READ = 2;
const EXCERPT_CHARS = 320;

function toolResults(messages: TurnMessage[], tool: string): ToolResult[] {
  return messages.flatMap((message) => (message.role === 'tool' && message.tool === tool ? [message.result] : []));
}

function bestParagraph(content: string, words: string[]): string {
  const paragraphs = content
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.replace(/\s+/g, ' ').trim())
    .filter((paragraph) => paragraph && !paragraph.startsWith('#'));
  const score = (paragraph: string) => words.filter((word) => paragraph.toLowerCase().includes(word)).length;
  const best = paragraphs.reduce((winner, paragraph) => (score(paragraph) > score(winner) ? paragraph : winner), paragraphs[0] ?? '');
  return best.length > EXCERPT_CHARS ? `${best.slice(0, EXCERPT_CHARS - 1)}…` : best;
}

function lastResult(messages: TurnMessage[], tool: string): ToolResult | undefined {
  return toolResults(messages, tool).at(-1);
}

function outcomeNote(result: ToolResult | undefined, success: string, action: string): string {
  if (!result) return '';
  if (result.status === 'success') return success;
  return `${action} ${result.status === 'denied' ? 'was denied' : 'failed'} (${result.code}: ${result.message}).`;
}

/**
 * The built-in plan: search the local sources for the prompt's words, read the best matches,
 * write a brief from what was read, save it as a draft, send it (after a human approves), and
 * answer. A step whose tool is not available to the turn is skipped, and a failed call is reported
 * in the answer rather than hidden.
 */
function builtInPlan({
  taskId,
  prompt,
  messages,
  availableTools,
}: {
  taskId: string;
  prompt: string;
  messages: TurnMessage[];
  availableTools: string[];
}): ModelReply {
  const searches = toolResults(messages, 'search_local_sources');
  if (searches.length === 0 && availableTools.includes('search_local_sources')) {
    return { toolCalls: [{ tool: 'search_local_sources', args: { query: prompt, mode: 'words', limit: 5 } }] };
  }
  const lastSearch = searches.at(-1);
  if (lastSearch && lastSearch.status !== 'success') {
    return { text: `I could not search the local sources (${lastSearch.code}: ${lastSearch.message}).`, toolCalls: [] };
  }
  const matches = ((lastSearch?.data as { matches?: SearchMatch[] } | undefined)?.matches ?? []).slice(0, DOCUMENTS_TO_READ);
  const reads = toolResults(messages, 'get_document');
  if (reads.length === 0 && matches.length > 0 && availableTools.includes('get_document')) {
    return { toolCalls: matches.map((match) => ({ tool: 'get_document', args: { id: match.id } })) };
  }
  if (matches.length === 0) return { text: `I found nothing in the local sources about "${prompt}".`, toolCalls: [] };

  const words = queryWords(prompt).map(wordStem);
  const lines = reads.map((result, index) => {
    if (result.status !== 'success') return `- ${matches[index]?.id ?? 'a document'} could not be read (${result.code}: ${result.message})`;
    if (typeof result.data === 'string') return `- (a long document, shortened) ${result.data.slice(0, EXCERPT_CHARS)}…`;
    const document = result.data as { id: string; title: string; content: string };
    return `- ${document.title} [${document.id}]: ${bestParagraph(document.content, words)}`;
  });
  if (lines.length === 0) lines.push(...matches.map((match) => `- ${match.title} [${match.id}]: ${match.snippet}`));
  const brief = `From the local sources, on "${prompt}":\n${lines.join('\n')}`;

  const draftPath = `brief-${taskSlug(taskId)}.md`;
  const draft = lastResult(messages, 'save_draft');
  if (!draft && availableTools.includes('save_draft')) {
    return { toolCalls: [{ tool: 'save_draft', args: { path: draftPath, content: `# Brief\n\n${brief}\n` } }] };
  }
  const sent = lastResult(messages, 'send_message');
  if (!sent && availableTools.includes('send_message')) {
    return { toolCalls: [{ tool: 'send_message', args: { to: 'requester', subject: `Brief: ${prompt.slice(0, 120)}`, body: brief } }] };
  }
  const saved = draft?.status === 'success' ? (draft.data as { path?: unknown } | undefined)?.path : undefined;
  const notes = [
    outcomeNote(draft, `The brief is saved as ${typeof saved === 'string' ? saved : `drafts/${draftPath}`}.`, 'Saving the draft'),
    outcomeNote(sent, 'It was sent to the requester.', 'Sending it'),
  ];
  return { text: [brief, ...notes.filter(Boolean)].join('\n\n'), toolCalls: [] };
}

/** The embedded model: plays the given script step by step, or the built-in plan when there is none. */
export function playScriptedModel({
  taskId,
  prompt,
  messages,
  script,
  availableTools,
}: {
  taskId: string;
  prompt: string;
  messages: TurnMessage[];
  script?: ScriptStep[];
  availableTools: string[];
}): ModelReply {
  // Earlier turns of a conversation come first; this turn starts at its own (last) user message.
  const lastUser = messages.map((message) => message.role).lastIndexOf('user');
  const turn = messages.slice(lastUser + 1);
  if (!script) return builtInPlan({ taskId, prompt, messages: turn, availableTools });
  const stepIndex = turn.filter((message) => message.role === 'assistant').length;
  const step = script[stepIndex];
  if (!step) return { text: `(the script has no step ${stepIndex + 1}; it ends here)`, toolCalls: [] };
  return { text: step.text, toolCalls: 'toolCalls' in step ? step.toolCalls.map(({ tool, args }) => ({ tool, args })) : [] };
}
