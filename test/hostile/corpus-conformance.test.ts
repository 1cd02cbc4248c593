import { execFileSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRunTool } from '../../activities/boundary/run-tool';
import { openSqliteStore } from '../../intents/sqlite-store';
import { indexFileFor, openCorpus } from '../../tools/search/corpus';
import { getDocumentTool } from '../../tools/built-in/get-document';
import { searchLocalSourcesTool } from '../../tools/built-in/search-local-sources';
import { MAX_CORPUS_DEPTH } from '../../tools/search/folder-scan';
import { openSearchIndex } from '../../tools/search/search-index';
import { createToolRegistry } from '../../tools/tool-registry';
import { eventLoopProbe } from '../helpers/event-loop-probe';
import { runToolOnce } from '../helpers/run-tool-once';
import { testConfig } from '../helpers/test-config';
import { scripted, useTurnRunner } from '../helpers/turn-runner';

/** The text of the "private key" outside the corpus, and what only /etc/passwd holds: neither may reach anything the corpus serves. */
const KEY_CANARY = 'PRIVATE-KEY-CANARY-93c1';
const PASSWD_MARK = 'root:x:0:0';
/** Text of a document below the depth bound: inside the tree, but past what a refresh walks. */
const DEEP_CANARY = 'DEEP-CANARY-5d20';
const OUTSIDE_MARKS = [KEY_CANARY, PASSWD_MARK, DEEP_CANARY];
/** A generous bound on how long the event loop may be held while hostile files are met: about liveness, not speed. */
const LIVENESS_MS = 2_000;
/** How much the worker may grow: a read of /proc/self/pagemap as a whole would take gigabytes. */
const MEMORY_GROWTH_BYTES = 512 * 1024 * 1024;

/** The hostile entries of the corpus and the reason each must be refused with. */
const HOSTILE = {
  'key.md': 'symbolic_link',
  'passwd.txt': 'symbolic_link',
  'pagemap.txt': 'symbolic_link',
  'mem.md': 'symbolic_link',
  'hard-key.md': 'hard_link',
  'pipe.md': 'special_file',
  'huge.md': 'too_large',
  loop: 'symbolic_link',
  'guides/up': 'symbolic_link',
} as const;

/**
 * A corpus folder with two good documents beside every hostile entry: links out of the tree (to a
 * private key, /etc/passwd, /proc/self/pagemap, /proc/self/mem), a hard link to the key, a FIFO,
 * a sparse 10 GB file, a folder link loop, and a tree deeper than the walk goes.
 */
function hostileCorpus() {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-corpus-'));
  const outside = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-secrets-'));
  const key = path.join(outside, 'id_rsa.md');
  writeFileSync(key, `# Deploy key\n\n-----BEGIN PRIVATE KEY-----\n${KEY_CANARY}\n-----END PRIVATE KEY-----\n`);
  writeFileSync(path.join(root, 'refunds.md'), '# Refund policy\n\nAnnual plans are refunded pro rata within thirty days.\n');
  mkdirSync(path.join(root, 'guides'));
  writeFileSync(path.join(root, 'guides', 'kites.md'), '# Kite flying\n\nKites need steady wind and open fields.\n');
  symlinkSync(key, path.join(root, 'key.md'));
  symlinkSync('/etc/passwd', path.join(root, 'passwd.txt'));
  symlinkSync('/proc/self/pagemap', path.join(root, 'pagemap.txt'));
  symlinkSync('/proc/self/mem', path.join(root, 'mem.md'));
  linkSync(key, path.join(root, 'hard-key.md'));
  execFileSync('mkfifo', [path.join(root, 'pipe.md')]);
  closeSync(openSync(path.join(root, 'huge.md'), 'w'));
  truncateSync(path.join(root, 'huge.md'), 10 * 1024 ** 3);
  symlinkSync('.', path.join(root, 'loop'));
  symlinkSync('..', path.join(root, 'guides', 'up'));
  let deep = root;
  for (let depth = 0; depth <= MAX_CORPUS_DEPTH + 4; depth++) deep = path.join(deep, 'deeper');
  mkdirSync(deep, { recursive: true });
  writeFileSync(path.join(deep, 'bottom.md'), `# Bottom\n\n${DEEP_CANARY}\n`);
  return { root };
}

/** Every byte of the index files in a state folder (the database, its WAL and shared memory). */
function indexBytes(stateFolder: string): string {
  return readdirSync(stateFolder)
    .filter((name) => name.startsWith('search-index-'))
    .map((name) => readFileSync(path.join(stateFolder, name)).toString('latin1'))
    .join('\n');
}

function expectNothingOutside(text: string, where: string) {
  for (const mark of OUTSIDE_MARKS) expect(text.includes(mark), `${mark} in ${where}`).toBe(false);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a corpus full of hostile files, through the real tools and their boundary', () => {
  it('serves the good documents and nothing outside, refuses each hostile file with its reason, and stays live and small', async () => {
    const { root } = hostileCorpus();
    const stateFolder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-state-'));
    const logLines: string[] = [];
    const corpus = openCorpus(root, { stateFolder, log: (line) => logLines.push(line) });
    const registry = createToolRegistry({ tools: [searchLocalSourcesTool(corpus), getDocumentTool(corpus)] });
    const runTool = createRunTool({ registry, store: openSqliteStore(':memory:') });
    let calls = 0;
    const run = (tool: string, args: unknown) => runToolOnce(runTool, { taskId: 'hostile-corpus', callId: `call-${calls++}`, tool, args });

    const memoryBefore = process.memoryUsage().rss;
    const probe = eventLoopProbe();
    const answers: Array<Awaited<ReturnType<typeof run>>> = [];
    for (const query of [KEY_CANARY, 'PRIVATE KEY deploy', 'root bash nologin', DEEP_CANARY, 'refund annual plans', 'kites wind']) {
      answers.push(await run('search_local_sources', { query }));
    }
    for (const query of ['PRIVATE|root:x|CANARY', '.'])
      answers.push(await run('search_local_sources', { query, mode: 'regex', limit: 20 }));
    const refusals = [];
    for (const id of ['key', 'passwd.txt', 'pagemap.txt', 'mem', 'hard-key', 'pipe', 'huge'])
      refusals.push({ id, ...(await run('get_document', { id })) });
    const good = await run('get_document', { id: 'refunds' });
    const nested = await run('get_document', { id: 'guides/kites' });
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(probe.stop()).toBeLessThan(LIVENESS_MS);
    expect(process.memoryUsage().rss - memoryBefore).toBeLessThan(MEMORY_GROWTH_BYTES);

    // Every handler ran for real, and the good documents are found and served.
    for (const answer of [...answers, ...refusals, good, nested]) expect(answer.executions).toBe(1);
    const ids = (answer: (typeof answers)[number]) => (answer.data as { matches: Array<{ id: string }> }).matches.map((match) => match.id);
    expect(ids(answers[4])).toEqual(['refunds']);
    expect(ids(answers[5])).toEqual(['guides/kites']);
    expect(ids(answers[7]).sort()).toEqual(['guides/kites', 'refunds']);
    expect(good).toMatchObject({ status: 'success', data: { id: 'refunds', content: expect.stringContaining('pro rata') } });
    expect(nested).toMatchObject({ status: 'success', data: { title: 'Kite flying' } });
    expect(answers[4].data).toMatchObject({ skippedFiles: Object.keys(HOSTILE).length + 1 });

    // Nothing outside reaches a search, and each hostile id is refused with a stable code and its reason, never its content.
    for (const answer of answers) {
      expect(answer.status).toBe('success');
      expect(ids(answer).every((id) => id === 'refunds' || id === 'guides/kites')).toBe(true);
      expectNothingOutside(JSON.stringify(answer), 'a search answer');
    }
    for (const refused of refusals) {
      expect(refused, refused.id).toMatchObject({ status: 'error', code: 'forbidden', retryable: false });
      expect(refused.data).toBeUndefined();
      expect(refused.message).toMatch(/ is not served: /);
      expectNothingOutside(JSON.stringify(refused), `get_document ${refused.id}`);
    }
    expect(refusals.find((refused) => refused.id === 'pipe')!.message).toBe('pipe.md is not served: a FIFO; only regular files are read');

    // Nothing outside reaches the index files; the log names each refused entry and why, and holds no content.
    expectNothingOutside(indexBytes(stateFolder), 'the index files');
    expect(
      corpus
        .index()
        .list()
        .map((entry) => entry.id),
    ).toEqual(['guides/kites', 'refunds']);
    expectNothingOutside(logLines.join('\n'), 'the log');
    for (const [entry, reason] of Object.entries(HOSTILE)) {
      expect(
        logLines.some((line) => line.includes(`"${entry}"`) && line.endsWith(`[${reason}]`)),
        `a log line for ${entry}`,
      ).toBe(true);
    }
    expect(logLines.some((line) => line.endsWith('[too_deep]'))).toBe(true);
    // Each refusal is logged once, however many calls refreshed the index.
    expect(new Set(logLines).size).toBe(logLines.length);
    expect(logLines).toHaveLength(Object.keys(HOSTILE).length + 1);
  });

  it('drops an indexed document whose file becomes a link to a secret, and never serves the secret', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-swap-'));
    const outside = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-secrets-'));
    writeFileSync(path.join(outside, 'secret.md'), `# Secret\n\n${KEY_CANARY}\n`);
    writeFileSync(path.join(root, 'notes.md'), '# Notes\n\nThe heater was repaired.\n');
    const logLines: string[] = [];
    const corpus = openCorpus(root, { log: (line) => logLines.push(line) });
    const getDocument = getDocumentTool(corpus);
    const context = { taskId: 't', callId: 'c', attempt: 1, signal: new AbortController().signal, idempotencyKey: 'k' };
    expect(await getDocument.handler(getDocument.input.parse({ id: 'notes' }), context)).toMatchObject({ ok: true });
    rmSync(path.join(root, 'notes.md'));
    symlinkSync(path.join(outside, 'secret.md'), path.join(root, 'notes.md'));
    const after = await getDocument.handler(getDocument.input.parse({ id: 'notes' }), context);
    expect(after).toMatchObject({ ok: false, code: 'forbidden' });
    expectNothingOutside(JSON.stringify(after), 'get_document');
    expect(corpus.index().list()).toEqual([]);
    expect(logLines).toEqual([expect.stringContaining('"notes.md": a symbolic link')]);
  });
});

describe('a corpus folder that is not there', () => {
  it('is an error naming it at first use, and works once the folder exists', () => {
    const parent = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-missing-'));
    const folder = path.join(parent, 'corpus');
    const corpus = openCorpus(folder, { log: () => undefined });
    expect(() => corpus.index()).toThrow(`corpus folder ${folder} cannot be opened: ENOENT`);
    mkdirSync(folder);
    writeFileSync(path.join(folder, 'notes.md'), '# Notes\n');
    expect(
      corpus
        .index()
        .list()
        .map((entry) => entry.id),
    ).toEqual(['notes']);
  });
});

describe('an index written by an older version of the corpus reader', () => {
  it('is rebuilt, and keeps none of the text it held in its file, when its file is now a link to a secret', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-upgrade-'));
    const outside = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-secrets-'));
    const stateFolder = mkdtempSync(path.join(os.tmpdir(), 'tollgate-hostile-state-'));
    writeFileSync(path.join(root, 'notes.md'), '# Notes\n\nThe heater was repaired.\n');
    // What an older reader left behind: the secret's text indexed under a name of the corpus, in a table of another version.
    writeFileSync(path.join(root, 'key.md'), `# Key\n\n${KEY_CANARY}\n`);
    const older = openSearchIndex(root, indexFileFor(stateFolder, root));
    older.refresh();
    older.close();
    const database = new Database(indexFileFor(stateFolder, root));
    database.prepare("UPDATE meta SET value = '3' WHERE key = 'schema'").run();
    database.close();
    expect(indexBytes(stateFolder)).toContain(KEY_CANARY);
    writeFileSync(path.join(outside, 'id_rsa.md'), `# Key\n\n${KEY_CANARY}\n`);
    rmSync(path.join(root, 'key.md'));
    symlinkSync(path.join(outside, 'id_rsa.md'), path.join(root, 'key.md'));

    const corpus = openCorpus(root, { stateFolder, log: () => undefined });
    expect(
      corpus
        .index()
        .list()
        .map((entry) => entry.id),
    ).toEqual(['notes']);
    expect(corpus.index().search(KEY_CANARY, { limit: 5 })).toEqual([]);
    corpus.index().close();
    expectNothingOutside(indexBytes(stateFolder), 'the rebuilt index files');
  });
});

describe('a corpus full of hostile files, in a real turn on the time-skipping server', () => {
  const runTurn = useTurnRunner();

  it('answers the turn: the searches find only the good documents, the linked key is refused, nothing outside reaches the history', async () => {
    const { root } = hostileCorpus();
    const warnings: string[] = [];
    vi.spyOn(console, 'warn').mockImplementation((line: unknown) => void warnings.push(String(line)));
    const config = testConfig({ corpus: root, retry: { initialInterval: '100ms', maximumInterval: '1s' } });
    const memoryBefore = process.memoryUsage().rss;
    const { result, modelInputs, history } = await runTurn({
      config,
      input: {
        prompt: 'Find the deploy key.',
        model: scripted([
          { toolCalls: [{ tool: 'search_local_sources', args: { query: 'deploy private key root bash' } }] },
          { toolCalls: [{ tool: 'get_document', args: { id: 'key' } }] },
          { toolCalls: [{ tool: 'search_local_sources', args: { query: 'PRIVATE|root:x', mode: 'regex' } }] },
          { toolCalls: [{ tool: 'get_document', args: { id: 'refunds' } }] },
          { text: 'Only the refund policy is there.' },
        ]),
      },
    });
    expect(process.memoryUsage().rss - memoryBefore).toBeLessThan(MEMORY_GROWTH_BYTES);
    expect(result).toMatchObject({ status: 'completed', answer: 'Only the refund policy is there.' });
    expect(result.toolCalls.map(({ tool, status, code, executions }) => ({ tool, status, code, executions }))).toEqual([
      { tool: 'search_local_sources', status: 'success', code: undefined, executions: 1 },
      { tool: 'get_document', status: 'error', code: 'forbidden', executions: 1 },
      { tool: 'search_local_sources', status: 'success', code: undefined, executions: 1 },
      { tool: 'get_document', status: 'success', code: undefined, executions: 1 },
    ]);
    expectNothingOutside(JSON.stringify(modelInputs), 'what the model was given');
    expect(JSON.stringify(modelInputs.at(-1))).toContain('pro rata');
    for (const event of history.events ?? []) {
      expectNothingOutside(Buffer.from(temporal.api.history.v1.HistoryEvent.encode(event).finish()).toString('latin1'), 'the history');
    }
    expectNothingOutside(warnings.join('\n'), 'the worker log');
    expect(warnings.some((line) => line.includes('"key.md": a symbolic link'))).toBe(true);
    expect(existsSync(path.join(root, 'key.md'))).toBe(true);
  });
});
