import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/load-config';
import { getDocumentTool } from '../../tools/built-in/get-document';
import { searchLocalSourcesTool } from '../../tools/built-in/search-local-sources';
import { indexFileFor, openCorpus } from '../../tools/search/corpus';
import { ftsQuery } from '../../tools/search/query-terms';
import { openSearchIndex, type SearchIndex } from '../../tools/search/search-index';
import { ToolOutcome } from '../../tools/tool-outcome';

const run = promisify(execFile);
const context = { taskId: 't', callId: 'c', attempt: 1, signal: new AbortController().signal };
const opened: SearchIndex[] = [];

function tempFolder(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `tollgate-${prefix}-`));
}

/** A corpus folder with the given files, and a state folder for its index. */
function fixture(files: Record<string, string | Buffer>): { folder: string; indexFile: string } {
  const folder = tempFolder('index-corpus');
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(folder, name)), { recursive: true });
    writeFileSync(path.join(folder, name), content);
  }
  return { folder, indexFile: path.join(tempFolder('index-state'), 'search.db') };
}

function open(folder: string, indexFile: string): SearchIndex {
  const index = openSearchIndex(folder, indexFile);
  opened.push(index);
  index.refresh();
  return index;
}

afterEach(() => {
  for (const index of opened.splice(0)) index.close();
});

const GUIDE = [
  '# Storage guide',
  '',
  'How the archive keeps files.',
  '',
  '## Deleting old records',
  '',
  'Records older than a year are removed by the nightly job.',
  '',
  '```sh',
  '# Not a heading: a comment in a code block',
  'archive prune --older-than 1y',
  '```',
  '',
  '## Restoring',
  '',
  'Ask the archive team to restore a record from the backup tape.',
  '',
].join('\n');

const PAGE = `<!doctype html><html><head><title>Kite flying</title><style>.wind { color: red }</style></head>
<body><h1>Kite flying</h1><p>Kites need steady wind &amp; open fields.</p>
<script>const secretTelemetry = "zanzibar";</script>
<h2>Launching a kite</h2><p>Walk backwards slowly while the line unwinds.</p></body></html>`;

describe('the search index', () => {
  it('reads Markdown, text and HTML, splits them into sections, and skips and counts the other files', () => {
    const { folder, indexFile } = fixture({
      'guide.md': GUIDE,
      'notes/minutes.txt': 'Weekly minutes\n\nThe heater in room four was repaired.\n',
      'kites.html': PAGE,
      'logo.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
      'dump.txt': Buffer.from('text\0with a NUL byte'),
      'data.json': '{"heater": true}',
    });
    const index = open(folder, indexFile);
    expect(index.list().map((entry) => entry.id)).toEqual(['guide', 'kites.html', 'notes/minutes.txt']);
    const stats = index.stats();
    expect(stats).toMatchObject({ documents: 3, skipped: 3, indexedByThisHandle: 3 });
    expect(stats.skippedExamples.map((entry) => entry.path).sort()).toEqual(['data.json', 'dump.txt', 'logo.png']);

    const guide = index.document('guide')!;
    expect(guide.title).toBe('Storage guide');
    expect(guide.sections.map((section) => section.heading)).toEqual(['Storage guide', 'Deleting old records', 'Restoring']);
    expect(guide.text.slice(guide.sections[2].start, guide.sections[2].end)).toMatch(/^## Restoring\n\nAsk the archive team/);

    const kites = index.document('kites.html')!;
    expect(kites.title).toBe('Kite flying');
    expect(kites.sections.map((section) => section.heading)).toEqual(['Kite flying', 'Launching a kite']);
    expect(kites.text).toContain('steady wind & open fields');
    expect(kites.text).not.toMatch(/secretTelemetry|zanzibar|color: red/);
    expect(index.search('zanzibar', { limit: 5 })).toEqual([]);
    expect(index.search('unwinds', { limit: 5 })[0]).toMatchObject({ id: 'kites.html', section: 'Launching a kite', sectionIndex: 1 });

    expect(index.document('notes/minutes.txt')!.title).toBe('Weekly minutes');
    expect(index.search('heater repaired', { limit: 5 }).map((hit) => hit.id)).toEqual(['notes/minutes.txt']);
  });

  it('names the section of a hit, with a snippet around the match, and ignores "#" lines inside fenced code', () => {
    const { folder, indexFile } = fixture({ 'guide.md': GUIDE });
    const index = open(folder, indexFile);
    const [hit] = index.search('backup tape', { limit: 5 });
    expect(hit).toMatchObject({ id: 'guide', title: 'Storage guide', section: 'Restoring', sectionIndex: 2 });
    expect(hit.snippet).toContain('backup tape');
    expect(index.document('guide')!.sections.some((section) => section.heading.includes('Not a heading'))).toBe(false);
  });

  it('finds other forms of a word: "deleting" finds "delete", "restored" finds "restoring"', () => {
    const { folder, indexFile } = fixture({
      'a.md': '# Cleanup\n\nTo delete a branch, run the command twice.\n',
      'b.md': '# Backups\n\nBackups are restored by the archive team.\n',
    });
    const index = open(folder, indexFile);
    expect(index.search('deleting', { limit: 5 }).map((hit) => hit.id)).toEqual(['a']);
    expect(index.search('restoring', { limit: 5 }).map((hit) => hit.id)).toEqual(['b']);
  });

  it('ranks a word in a title or heading above the same word in body text', () => {
    const filler = 'alpha beta gamma delta epsilon zeta eta theta iota kappa';
    const { folder, indexFile } = fixture({
      'body.md': `# Handbook\n\n## Travel\n\nThe rotation ${filler}.\n`,
      'heading.md': `# Handbook two\n\n## Rotation\n\nThe travel ${filler}.\n`,
      'title.md': `# Rotation\n\n## Handbook\n\nThe travel ${filler}.\n`,
    });
    const index = open(folder, indexFile);
    expect(index.search('rotation', { limit: 5 }).map((hit) => hit.id)).toEqual(['title', 'heading', 'body']);
  });

  it('filters by folder and by document', () => {
    const { folder, indexFile } = fixture({
      'policies/leave.md': '# Leave\n\nAnnual leave is 25 days.\n',
      'policies/hr/sick.md': '# Sick leave\n\nSick leave needs a note after three days.\n',
      'handbook/leave.md': '# Leave in the handbook\n\nLeave is booked in the portal.\n',
      'guide.md': GUIDE,
    });
    const index = open(folder, indexFile);
    expect(index.search('leave', { limit: 5 }).map((hit) => hit.id)).toHaveLength(3);
    expect(
      index
        .search('leave', { limit: 5, folder: 'policies' })
        .map((hit) => hit.id)
        .sort(),
    ).toEqual(['policies/hr/sick', 'policies/leave']);
    expect(index.search('leave', { limit: 5, folder: 'policies/hr/' }).map((hit) => hit.id)).toEqual(['policies/hr/sick']);
    expect(index.search('leave', { limit: 5, folder: 'polic' })).toEqual([]);
    const within = index.search('archive record', { limit: 5, document: 'guide' });
    expect(within.map((hit) => hit.sectionIndex).sort()).toEqual([0, 1, 2]);
    expect(index.search('leave', { limit: 5, document: 'nothing-here' })).toEqual([]);
  });

  it('reindexes only the changed file, drops a deleted one, and reuses the index after a restart', () => {
    const { folder, indexFile } = fixture({
      'one.md': '# One\n\nApples grow here.\n',
      'two.md': '# Two\n\nPears grow here.\n',
      'three.md': '# Three\n\nPlums grow here.\n',
    });
    const first = open(folder, indexFile);
    expect(first.stats()).toMatchObject({ documents: 3, indexedByThisHandle: 3 });

    first.refresh();
    expect(first.stats().indexedByThisHandle).toBe(3);

    writeFileSync(path.join(folder, 'two.md'), '# Two\n\nQuinces grow here now.\n');
    first.refresh();
    expect(first.stats().indexedByThisHandle).toBe(4);
    expect(first.search('quinces', { limit: 5 }).map((hit) => hit.id)).toEqual(['two']);
    expect(first.search('pears', { limit: 5 })).toEqual([]);

    // A new mtime with the same bytes: the hash says nothing changed.
    const later = new Date(Date.now() + 60_000);
    utimesSync(path.join(folder, 'one.md'), later, later);
    first.refresh();
    expect(first.stats().indexedByThisHandle).toBe(4);

    rmSync(path.join(folder, 'three.md'));
    first.refresh();
    expect(first.stats()).toMatchObject({ documents: 2, removedByThisHandle: 1 });
    expect(first.search('plums', { limit: 5 })).toEqual([]);
    expect(first.document('three')).toBeUndefined();
    first.close();
    opened.splice(opened.indexOf(first), 1);

    const second = open(folder, indexFile);
    expect(second.stats()).toMatchObject({ documents: 2, indexedByThisHandle: 0, removedByThisHandle: 0 });
    expect(
      second
        .search('quinces apples', { limit: 5 })
        .map((hit) => hit.id)
        .sort(),
    ).toEqual(['one', 'two']);
  });

  it('rebuilds an index written by another version of its tables', () => {
    const { folder, indexFile } = fixture({ 'one.md': '# One\n\nApples.\n', 'two.md': '# Two\n\nPears.\n' });
    open(folder, indexFile).close();
    opened.length = 0;
    const db = new Database(indexFile);
    db.prepare("UPDATE meta SET value = 'older' WHERE key = 'schema'").run();
    db.close();
    const reopened = open(folder, indexFile);
    expect(reopened.stats()).toMatchObject({ documents: 2, indexedByThisHandle: 2 });
    expect(reopened.search('pears', { limit: 5 }).map((hit) => hit.id)).toEqual(['two']);
  });

  it('never lets a query be an FTS5 syntax error, whatever the model sends', () => {
    const { folder, indexFile } = fixture({ 'guide.md': GUIDE, 'title.md': '# Title words\n\nNear the star.\n' });
    const index = open(folder, indexFile);
    const hostile = [
      '"',
      '""',
      'NEAR(',
      'NEAR(archive record, 2)',
      '*',
      'arch*',
      '-',
      '-archive',
      'title:',
      'title: archive',
      '{title heading}: archive',
      'archive AND OR NOT',
      'NOT',
      '(archive',
      ')(',
      '^archive',
      "'; DROP TABLE files; --",
      '\u0000',
      'café naïve 日本語',
      'x'.repeat(10_000),
      Array.from({ length: 2_000 }, (_, position) => `w${position}`).join(' '),
    ];
    for (const query of hostile) expect(() => index.search(query, { limit: 5 }), query.slice(0, 40)).not.toThrow();
    expect(index.search('title: archive', { limit: 5 }).map((hit) => hit.id)).toContain('guide');
    expect(index.search('NEAR(', { limit: 5 }).map((hit) => hit.id)).toEqual(['title']);
    expect(index.search('"', { limit: 5 })).toEqual([]);
    expect(ftsQuery('say "hi" NEAR(x) title:y*')).toBe('"say" OR "hi" OR "near" OR "x" OR "title" OR "y"');
    expect(index.list()).toHaveLength(2);
  });

  it('keeps one consistent index when two processes write it at once', async () => {
    const folder = tempFolder('index-shared');
    const indexFile = path.join(tempFolder('index-state'), 'search.db');
    for (let position = 0; position < 30; position++) {
      writeFileSync(path.join(folder, `base-${position}.md`), `# Base ${position}\n\nCommon words and token${position}.\n`);
    }
    const writer = (name: string) =>
      [
        "const { writeFileSync, rmSync } = require('node:fs');",
        "const path = require('node:path');",
        "const { openSearchIndex } = require('./tools/search/search-index');",
        `const [folder, file, name] = ${JSON.stringify([folder, indexFile, name])};`,
        'const index = openSearchIndex(folder, file);',
        'for (let round = 0; round < 25; round++) {',
        '  writeFileSync(path.join(folder, `${name}-${round % 5}.md`), `# ${name} ${round}\\n\\nRound ${name}round${round} text.\\n`);',
        '  if (round % 7 === 6) rmSync(path.join(folder, `${name}-${(round + 1) % 5}.md`), { force: true });',
        '  index.refresh();',
        "  index.search('common words', { limit: 5 });",
        '}',
        'console.log(JSON.stringify(index.stats()));',
      ].join('\n');
    const args = (name: string) => ['--require', require.resolve('tsx/cjs'), '-e', writer(name)];
    const options = { cwd: PROJECT_ROOT, timeout: 60_000 };
    const answers = await Promise.all([run(process.execPath, args('left'), options), run(process.execPath, args('right'), options)]);
    for (const { stdout } of answers) expect(JSON.parse(stdout.trim().split('\n').at(-1)!).indexedByThisHandle).toBeGreaterThan(0);

    const db = new Database(indexFile, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    const perDocument = db.prepare<[], { doc: string; count: number }>('SELECT doc, count(*) AS count FROM sections GROUP BY doc').all();
    const files = db.prepare<[], { path: string; sections: string }>('SELECT path, sections FROM files').all();
    db.close();
    expect(new Set(perDocument.map((row) => row.doc))).toEqual(new Set(files.map((row) => row.path)));
    for (const row of files) {
      expect(perDocument.find((entry) => entry.doc === row.path)?.count, row.path).toBe(JSON.parse(row.sections).length);
    }

    const index = open(folder, indexFile);
    const writable = new Database(indexFile);
    expect(() => writable.prepare("INSERT INTO sections (sections) VALUES ('integrity-check')").run()).not.toThrow();
    writable.close();
    const onDisk = index.list().map((entry) => entry.path);
    expect(onDisk.filter((entry) => entry.startsWith('base-'))).toHaveLength(30);
    for (const entry of onDisk) expect(existsSync(path.join(folder, entry)), entry).toBe(true);
    for (const name of ['left', 'right']) {
      expect(index.search(`${name}round24`, { limit: 5 }).map((hit) => hit.id)).toEqual([`${name}-4`]);
    }
  });
});

describe('the read tools over the index', () => {
  it('keep the index in the state folder, where a new corpus handle finds it built', async () => {
    const { folder } = fixture({ 'guide.md': GUIDE });
    const stateFolder = tempFolder('index-state');
    const corpus = openCorpus(folder, { stateFolder });
    const search = searchLocalSourcesTool(corpus);
    const outcome = await search.handler(search.input.parse({ query: 'backup tape' }), context);
    expect(outcome).toEqual(ToolOutcome.ok({ matches: [expect.objectContaining({ id: 'guide', section: 'Restoring' })] }));
    expect(existsSync(indexFileFor(stateFolder, folder))).toBe(true);
    const again = openCorpus(folder, { stateFolder }).index();
    opened.push(again);
    expect(again.stats()).toMatchObject({ documents: 1, indexedByThisHandle: 0 });
  });

  it('report the files they skip in the search answer', async () => {
    const { folder } = fixture({ 'guide.md': GUIDE, 'photo.jpg': Buffer.from([0xff, 0xd8, 0xff, 0]) });
    const search = searchLocalSourcesTool(openCorpus(folder));
    const outcome = await search.handler(search.input.parse({ query: 'archive' }), context);
    expect(ToolOutcome.is(outcome) && outcome.ok && outcome.data).toMatchObject({ skippedFiles: 1 });
  });

  it('search a regular expression within a folder, naming the section of the first match', async () => {
    const { folder } = fixture({ 'a/guide.md': GUIDE, 'b/guide.md': GUIDE });
    const search = searchLocalSourcesTool(openCorpus(folder));
    const outcome = await search.handler(search.input.parse({ query: 'tape', mode: 'regex', folder: 'b' }), context);
    expect(ToolOutcome.is(outcome) && outcome.ok && outcome.data).toEqual({
      matches: [expect.objectContaining({ id: 'b/guide', section: 'Restoring', sectionIndex: 2 })],
    });
  });

  it('get_document reads one section by index or heading, or a range, with the size', async () => {
    const long = `# Long\n\n${'word '.repeat(3_000)}\n\n## Tail\n\nThe end.\n`;
    const { folder } = fixture({ 'guide.md': GUIDE, 'long.md': long });
    const tool = getDocumentTool(openCorpus(folder));
    const read = async (args: unknown) => {
      const outcome = await tool.handler(tool.input.parse(args), context);
      if (!ToolOutcome.is(outcome)) throw new Error('not an outcome');
      return outcome;
    };
    const byIndex = await read({ id: 'guide', section: 2 });
    expect(byIndex.ok && byIndex.data).toMatchObject({
      id: 'guide',
      size: GUIDE.length,
      section: { index: 2, heading: 'Restoring' },
      start: 0,
      content: expect.stringMatching(/^## Restoring\n\nAsk the archive team to restore a record from the backup tape\.\n*$/),
    });
    const byHeading = await read({ id: 'guide', section: 'deleting OLD' });
    expect(byHeading.ok && (byHeading.data as { content: string }).content).toMatch(/^## Deleting old records/);
    const range = await read({ id: 'guide', start: 2, length: 13 });
    expect(range.ok && range.data).toMatchObject({ content: 'Storage guide', start: 2, end: 15, nextStart: 15, size: GUIDE.length });

    const first = await read({ id: 'long' });
    const firstData = first.ok ? (first.data as { content: string; nextStart: number; size: number }) : undefined;
    expect(firstData?.content).toHaveLength(6_000);
    expect(firstData?.size).toBe(long.length);
    expect(JSON.stringify(firstData).length).toBeLessThanOrEqual(tool.maxOutputChars);
    const rest = await read({ id: 'long', start: firstData?.nextStart });
    expect(rest.ok && (rest.data as { content: string }).content).toBe(long.slice(6_000, 12_000));

    const missing = await read({ id: 'guide', section: 'Nowhere' });
    expect(!missing.ok && missing.message).toMatch(
      /^section: document "guide" has no section headed "Nowhere"; its sections include 0: Storage/,
    );
    const outOfRange = await read({ id: 'guide', section: 9 });
    expect(!outOfRange.ok && outOfRange.message).toBe('section: document "guide" has sections 0 to 2, not 9');
    const past = await read({ id: 'guide', section: 2, start: 10_000 });
    expect(!past.ok && past.message).toMatch(/^start: 10000 is past the end of the section/);
  });

  it('get_document fits its whole answer in the output bound, escapes and a long list of sections included', async () => {
    const headings = Array.from({ length: 60 }, (_, position) => `## Section ${position} ${'with a long heading '.repeat(6)}`);
    const text = `# Many\n\n${headings.map((heading) => `${heading}\n\n${'"quoted"\n'.repeat(40)}`).join('\n')}`;
    const { folder } = fixture({ 'many.md': text });
    const tool = getDocumentTool(openCorpus(folder));
    let start = 0;
    let read = '';
    for (let part = 0; part < 20 && start < text.length; part++) {
      const outcome = await tool.handler(tool.input.parse({ id: 'many', start }), context);
      if (!ToolOutcome.is(outcome) || !outcome.ok) throw new Error('get_document failed');
      const data = outcome.data as { content: string; end: number; nextStart?: number; moreSections: number };
      expect(JSON.stringify(data).length).toBeLessThanOrEqual(tool.maxOutputChars);
      expect(data.content.length).toBeGreaterThan(1_000);
      expect(data.moreSections).toBe(21);
      read += data.content;
      start = data.nextStart ?? text.length;
    }
    expect(read).toBe(text);
  });

  it('search_local_sources fits its answer in the output bound: shorter snippets first, then fewer hits, counted', async () => {
    const files = Object.fromEntries(
      Array.from({ length: 20 }, (_, position) => [
        `topic-${position}.md`,
        `# Topic ${position} ${'with a very long title '.repeat(8)}\n\n## Lanterns ${'and a long heading '.repeat(8)}\n\n${'Lanterns glow. '.repeat(30)}\n`,
      ]),
    );
    const { folder } = fixture(files);
    const search = searchLocalSourcesTool(openCorpus(folder));
    const outcome = await search.handler(search.input.parse({ query: 'lanterns', limit: 20 }), context);
    if (!ToolOutcome.is(outcome) || !outcome.ok) throw new Error('search failed');
    const data = outcome.data as { matches: Array<{ snippet: string }>; more: number };
    expect(JSON.stringify(data).length).toBeLessThanOrEqual(search.maxOutputChars);
    expect(data.matches.length).toBeGreaterThan(0);
    expect(data.matches.length + data.more).toBe(20);
    for (const match of data.matches) expect(match.snippet.length).toBeLessThanOrEqual(80);
  });
});
