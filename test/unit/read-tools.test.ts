import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { checkToolCall } from '../../activities/boundary/check-tool-call';
import { openCorpus } from '../../tools/search/corpus';
import { createToolRegistry } from '../../tools/tool-registry';
import { getDocumentTool } from '../../tools/built-in/get-document';
import { countMatches, searchCorpus, searchLocalSourcesTool } from '../../tools/built-in/search-local-sources';
import { countRegexMatches } from '../../tools/built-in/regex-search-worker';
import { ToolOutcome } from '../../tools/tool-outcome';
import { toolJsonSchema } from '../../tools/define-tool';
import { PROJECT_ROOT } from '../../config/load-config';

const run = promisify(execFile);
const corpus = openCorpus(path.join(PROJECT_ROOT, 'examples', 'corpus'));
const search = searchLocalSourcesTool(corpus);
const getDocument = getDocumentTool(corpus);
const registry = createToolRegistry({ tools: [search, getDocument] });
const context = { taskId: 't', callId: 'c', attempt: 1, signal: new AbortController().signal };
/** Backtracks exponentially on any run of words not followed by 30 digits: every document of the corpus. */
const CATASTROPHIC = '([a-z]+\\s?)+\\d{30}';

async function runSearch(args: unknown) {
  const outcome = await search.handler(search.input.parse(args), context);
  if (!ToolOutcome.is(outcome) || !outcome.ok) throw new Error('search did not succeed');
  return (outcome.data as { matches: Array<{ id: string; title: string; score: number; snippet: string }> }).matches;
}

describe('the shipped corpus', () => {
  it('holds 10 to 20 markdown documents with titles', () => {
    const documents = corpus.documents();
    expect(documents.length).toBeGreaterThanOrEqual(10);
    expect(documents.length).toBeLessThanOrEqual(20);
    for (const document of documents) expect(document.title).not.toBe(document.id);
  });
});

describe('search_local_sources', () => {
  it('finds documents by words, best first', async () => {
    const matches = await runSearch({ query: 'refund annual plans' });
    expect(matches[0].id).toBe('refund-policy');
    expect(matches[0].snippet.toLowerCase()).toContain('refund');
    expect(matches.map((match) => match.score)).toEqual([...matches.map((match) => match.score)].sort((a, b) => b - a));
  });

  it('finds documents by a regular expression', async () => {
    const matches = await runSearch({ query: 'SEV[12]', mode: 'regex' });
    expect(matches.map((match) => match.id)).toEqual(expect.arrayContaining(['incident-severity', 'release-process']));
  });

  it('counts the matches of a regular expression on its worker thread exactly as on this thread', async () => {
    const documents = corpus.documents();
    for (const source of ['SEV[12]', 'on-?call', 'refund|return', 'x*', '^#']) {
      const threaded = await countRegexMatches(source, documents, new AbortController().signal);
      expect(threaded, source).toEqual(documents.map((document) => countMatches(new RegExp(source, 'i'), document)));
    }
  });

  it('stops a catastrophically backtracking pattern when its signal aborts, and the event loop keeps turning meanwhile', async () => {
    const controller = new AbortController();
    const reason = new Error('the call timed out');
    setTimeout(() => controller.abort(reason), 500);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    const started = Date.now();
    try {
      await expect(searchCorpus(corpus, { query: CATASTROPHIC, mode: 'regex', limit: 5 }, controller.signal)).rejects.toBe(reason);
    } finally {
      clearInterval(ticker);
    }
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(ticks).toBeGreaterThanOrEqual(10);
    // A thread left backtracking would spend about a second of CPU per second; a terminated one spends none.
    const before = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const spent = process.cpuUsage(before);
    expect((spent.user + spent.system) / 1000).toBeLessThan(100);
  });

  it('searches normally again right after a hostile pattern was stopped', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('the call timed out')), 200);
    await expect(countRegexMatches(CATASTROPHIC, corpus.documents(), controller.signal)).rejects.toThrow('the call timed out');
    expect((await runSearch({ query: 'SEV[12]', mode: 'regex' }))[0].id).toBe('incident-severity');
    expect((await runSearch({ query: 'SEV[12]', mode: 'regex' }))[0].id).toBe('incident-severity');
  });

  it('leaves no search thread that keeps a finished program alive', async () => {
    const script = [
      "const { openCorpus } = require('./tools/search/corpus');",
      "const { searchCorpus } = require('./tools/built-in/search-local-sources');",
      "const corpus = openCorpus('examples/corpus');",
      "searchCorpus(corpus, { query: 'SEV[12]', mode: 'regex', limit: 5 }, new AbortController().signal)",
      '  .then((matches) => console.log(matches[0].id));',
    ].join('\n');
    const started = Date.now();
    const args = ['--require', require.resolve('tsx/cjs'), '-e', script];
    const { stdout } = await run(process.execPath, args, { cwd: PROJECT_ROOT, timeout: 30_000 });
    expect(stdout.trim()).toBe('incident-severity');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('never starts a regular expression search whose signal has already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled'));
    await expect(countRegexMatches('SEV', corpus.documents(), controller.signal)).rejects.toThrow('cancelled');
  });

  it('returns an empty list, as a success, when nothing matches', async () => {
    expect(await runSearch({ query: 'zeppelin quasar' })).toEqual([]);
  });

  it('respects the limit', async () => {
    expect(await runSearch({ query: 'the days hours', limit: 2 })).toHaveLength(2);
  });

  it('refuses an invalid regular expression before it runs, as invalid_arguments', () => {
    const checked = checkToolCall({
      registry,
      request: { callId: 'c1', tool: 'search_local_sources', args: { query: '(unclosed', mode: 'regex' } },
    });
    expect(checked.refusal?.code).toBe('invalid_arguments');
    expect(checked.refusal?.message).toMatch(/^query: not a valid regular expression/);
  });

  it('refuses unknown argument keys and missing queries', () => {
    expect(
      checkToolCall({ registry, request: { callId: 'c', tool: 'search_local_sources', args: { query: 'x', colour: 1 } } }).refusal?.code,
    ).toBe('invalid_arguments');
    expect(checkToolCall({ registry, request: { callId: 'c', tool: 'search_local_sources', args: {} } }).refusal?.message).toMatch(
      /^query: /,
    );
  });

  it('reads a changed corpus at once', async () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-corpus-'));
    const fresh = searchLocalSourcesTool(openCorpus(folder));
    writeFileSync(path.join(folder, 'kites.md'), '# Kites\n\nKites fly in wind.\n');
    const outcome = await fresh.handler(fresh.input.parse({ query: 'kites' }), context);
    expect(outcome).toEqual(ToolOutcome.ok({ matches: [expect.objectContaining({ id: 'kites', title: 'Kites' })] }));
  });
});

describe('get_document', () => {
  it('returns a whole document by id', async () => {
    const outcome = await getDocument.handler({ id: 'on-call-rotation' }, context);
    expect(ToolOutcome.is(outcome) && outcome.ok && outcome.data).toMatchObject({ id: 'on-call-rotation', title: 'On-call rotation' });
  });

  it('answers an unknown id with an error the model can act on', async () => {
    const outcome = await getDocument.handler({ id: 'refund' }, context);
    expect(outcome).toEqual(
      ToolOutcome.error('no document with id "refund"; similar ids: refund-policy', { code: 'tool_failure', retryable: false }),
    );
    const none = await getDocument.handler({ id: 'zzz' }, context);
    expect(ToolOutcome.is(none) && !none.ok && none.message).toContain('call search_local_sources to find ids');
  });

  it('publishes a JSON schema with the field descriptions', () => {
    expect(toolJsonSchema(getDocument)).toMatchObject({
      type: 'object',
      properties: { id: { type: 'string', description: expect.stringContaining('search_local_sources') } },
    });
  });
});
