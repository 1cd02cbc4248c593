// Issue 19: retrieval quality and cost of the read tools' search over the Node.js API documentation
// (Debian's nodejs-doc), on the questions of bench/search-questions.json: the full-text index
// (SQLite FTS5), the search it replaced (bench/legacy-search.ts) and MiniSearch's default BM25 over
// the same sections; then build time, size, latency and memory at the documentation's size and at 10×.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { gunzipSync } from 'node:zlib';
import MiniSearch from 'minisearch';
import { PROJECT_ROOT } from '../../config/load-config';
import { documentText, indexedBody } from '../../tools/search/document-text';
import { documentId } from '../../tools/search/folder-scan';
import { openSearchIndex } from '../../tools/search/search-index';
import type { CorpusDocument } from '../../tools/search/corpus';
import { legacySearch } from '../legacy-search';
import { median, percentile, table, type SectionResult } from '../lib';

/** Where Debian's nodejs-doc puts the API documentation when it is installed. */
const INSTALLED_DOCS = '/usr/share/doc/nodejs/api';
/** Where `setup --bench` unpacks the package otherwise (it never installs it). */
const UNPACKED_DOCS = path.join(PROJECT_ROOT, '.tollgate', 'bench', 'nodejs-doc-package', 'usr', 'share', 'doc', 'nodejs', 'api');
/** The API documentation the benchmark reads: the installed copy, else the unpacked one. */
export const NODE_DOCS_SOURCE = existsSync(INSTALLED_DOCS) ? INSTALLED_DOCS : UNPACKED_DOCS;
const WORK_FOLDER = path.join(PROJECT_ROOT, '.tollgate', 'bench', 'nodejs-doc');
const COPIES = 10;
const TOP = 5;
const MRR_DEPTH = 10;

interface Question {
  question: string;
  answers: Array<{ document: string; sections: string[] }>;
}

/** One ranked answer of an engine: a document id and the heading of the section that matched, if it knows one. */
interface Ranked {
  id: string;
  section?: string;
}

interface Engine {
  name: string;
  search(query: string, limit: number): Ranked[];
}

function gc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

function memory(): { rss: number; heap: number } {
  gc();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heap: heapUsed };
}

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(2));

/** Decompresses the Markdown documentation into a git-ignored folder once; a missing package is an error saying how to install it. */
function prepareDocs(): { single: string; tenfold: string } {
  if (!existsSync(NODE_DOCS_SOURCE)) {
    throw new Error(`${NODE_DOCS_SOURCE} is missing: run npm run setup -- --bench, which unpacks Debian's nodejs-doc there`);
  }
  const single = path.join(WORK_FOLDER, '1x');
  const tenfold = path.join(WORK_FOLDER, '10x');
  if (!existsSync(path.join(single, 'fs.md'))) {
    rmSync(WORK_FOLDER, { recursive: true, force: true });
    mkdirSync(single, { recursive: true });
    for (const name of readdirSync(NODE_DOCS_SOURCE)) {
      const from = path.join(NODE_DOCS_SOURCE, name);
      if (name.endsWith('.md.gz')) writeFileSync(path.join(single, name.slice(0, -'.gz'.length)), gunzipSync(readFileSync(from)));
      else if (name.endsWith('.md')) copyFileSync(from, path.join(single, name));
    }
    for (let copy = 0; copy < COPIES; copy++) {
      const folder = path.join(tenfold, `copy-${copy}`);
      mkdirSync(folder, { recursive: true });
      for (const name of readdirSync(single)) copyFileSync(path.join(single, name), path.join(folder, name));
    }
  }
  return { single, tenfold };
}

function markdownFiles(folder: string, relative = ''): string[] {
  return readdirSync(path.join(folder, relative), { withFileTypes: true }).flatMap((entry) => {
    const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
    if (entry.isDirectory()) return markdownFiles(folder, child);
    return entry.name.endsWith('.md') ? [child] : [];
  });
}

/** The documents as the old corpus read them: every file in memory, title from the first `#` heading. */
function legacyDocuments(folder: string): CorpusDocument[] {
  return markdownFiles(folder).map((file) => {
    const content = readFileSync(path.join(folder, file), 'utf8');
    const heading = /^#\s+(.+)$/m.exec(content);
    const id = documentId(file);
    return { id, title: heading ? heading[1].trim() : id, content };
  });
}

/** The first `limit` distinct documents of a ranked list of sections. */
function distinctDocuments(ranked: Ranked[], limit: number): Ranked[] {
  const seen = new Set<string>();
  return ranked.filter((hit) => !seen.has(hit.id) && seen.add(hit.id)).slice(0, limit);
}

function isAnswer(question: Question, hit: Ranked, bySection: boolean): boolean {
  return question.answers.some((answer) => {
    if (answer.document !== hit.id) return false;
    if (!bySection || answer.sections.length === 0) return true;
    const heading = (hit.section ?? '').toLowerCase();
    return answer.sections.some((section) => heading.includes(section.toLowerCase()));
  });
}

interface Quality {
  recall: number;
  mrr: number;
  sectionRecall?: number;
  misses: string[];
}

function quality(engine: Engine, questions: Question[], hasSections: boolean): Quality {
  let found = 0;
  let foundSection = 0;
  let reciprocal = 0;
  const misses: string[] = [];
  for (const question of questions) {
    const ranked = engine.search(question.question, MRR_DEPTH);
    const rank = ranked.findIndex((hit) => isAnswer(question, hit, false));
    if (rank >= 0 && rank < TOP) found++;
    else misses.push(question.question);
    if (rank >= 0) reciprocal += 1 / (rank + 1);
    if (ranked.slice(0, TOP).some((hit) => isAnswer(question, hit, true))) foundSection++;
  }
  const count = questions.length;
  return {
    recall: found / count,
    mrr: reciprocal / count,
    ...(hasSections ? { sectionRecall: foundSection / count } : {}),
    misses,
  };
}

interface Cost {
  engine: string;
  scale: string;
  documents: number;
  buildMs: number;
  sizeBytes: number;
  medianMs: number;
  p95Ms: number;
  rssDelta: number;
  heapDelta: number;
}

function latencies(engine: Engine, questions: Question[], rounds: number): number[] {
  const times: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const question of questions) {
      const started = performance.now();
      engine.search(question.question, TOP);
      times.push(performance.now() - started);
    }
  }
  return times;
}

/** Builds one engine over a folder and measures it; `quality` only at the documentation's own size. */
function measure(
  scale: string,
  folder: string,
  questions: Question[],
  rounds: number,
): { costs: Cost[]; engines: Array<{ engine: Engine; hasSections: boolean }>; close: () => void } {
  const costs: Cost[] = [];
  const engines: Array<{ engine: Engine; hasSections: boolean }> = [];
  const documents = markdownFiles(folder).length;

  // The full-text index, built from nothing in a fresh file.
  const indexFile = path.join(WORK_FOLDER, `index-${scale}.db`);
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${indexFile}${suffix}`, { force: true });
  let before = memory();
  let started = performance.now();
  const index = openSearchIndex(folder, indexFile);
  index.refresh();
  let buildMs = performance.now() - started;
  let after = memory();
  const ftsEngine: Engine = {
    name: 'FTS5 index (new)',
    search: (query, limit) => {
      index.refresh();
      return index.search(query, { limit }).map((hit) => ({ id: hit.id, section: hit.section }));
    },
  };
  const fileSize = ['', '-wal'].reduce(
    (sum, suffix) => sum + (existsSync(`${indexFile}${suffix}`) ? statSync(`${indexFile}${suffix}`).size : 0),
    0,
  );
  let times = latencies(ftsEngine, questions, rounds);
  costs.push({
    engine: ftsEngine.name,
    scale,
    documents,
    buildMs,
    sizeBytes: fileSize,
    medianMs: median(times),
    p95Ms: percentile(times, 0.95),
    rssDelta: after.rss - before.rss,
    heapDelta: after.heap - before.heap,
  });
  engines.push({ engine: ftsEngine, hasSections: true });

  // The old search: no index; every call read every file and scanned it once per query word.
  before = memory();
  started = performance.now();
  let held = legacyDocuments(folder);
  buildMs = performance.now() - started;
  after = memory();
  const legacyEngine: Engine = {
    name: 'old search (baseline)',
    search: (query, limit) => {
      held = legacyDocuments(folder);
      return legacySearch(held, query, limit).map((hit) => ({ id: hit.id }));
    },
  };
  times = latencies(legacyEngine, questions, 1);
  costs.push({
    engine: legacyEngine.name,
    scale,
    documents,
    buildMs,
    sizeBytes: held.reduce((sum, document) => sum + Buffer.byteLength(document.content), 0),
    medianMs: median(times),
    p95Ms: percentile(times, 0.95),
    rssDelta: after.rss - before.rss,
    heapDelta: after.heap - before.heap,
  });
  engines.push({ engine: legacyEngine, hasSections: false });

  // MiniSearch with its defaults (BM25, OR of the terms, no prefix or fuzzy matching) over the same sections.
  before = memory();
  started = performance.now();
  const mini = new MiniSearch<{ id: number; doc: string; title: string; heading: string; body: string }>({
    fields: ['title', 'heading', 'body'],
    storeFields: ['doc', 'heading'],
  });
  let next = 0;
  for (const file of markdownFiles(folder)) {
    const parsed = documentText('markdown', readFileSync(path.join(folder, file), 'utf8'), path.basename(file, '.md'));
    mini.addAll(
      parsed.sections.map((section) => ({
        id: next++,
        doc: documentId(file),
        title: parsed.title,
        heading: section.heading,
        body: indexedBody('markdown', parsed.text, section),
      })),
    );
  }
  buildMs = performance.now() - started;
  after = memory();
  const miniEngine: Engine = {
    name: 'MiniSearch BM25 (baseline)',
    search: (query, limit) =>
      distinctDocuments(
        mini.search(query).map((result) => ({ id: result.doc as string, section: result.heading as string })),
        limit,
      ),
  };
  times = latencies(miniEngine, questions, rounds);
  costs.push({
    engine: miniEngine.name,
    scale,
    documents,
    buildMs,
    sizeBytes: Buffer.byteLength(JSON.stringify(mini)),
    medianMs: median(times),
    p95Ms: percentile(times, 0.95),
    rssDelta: after.rss - before.rss,
    heapDelta: after.heap - before.heap,
  });
  engines.push({ engine: miniEngine, hasSections: true });
  return { costs, engines, close: () => index.close() };
}

export async function searchSection(): Promise<SectionResult> {
  const questions = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'bench', 'search-questions.json'), 'utf8')) as Question[];
  const { single, tenfold } = prepareDocs();

  const one = measure('1×', single, questions, 3);
  const qualities = one.engines.map(({ engine, hasSections }) => ({ engine: engine.name, ...quality(engine, questions, hasSections) }));
  one.close();
  const ten = measure('10×', tenfold, questions, 1);
  ten.close();

  const pct = (value: number) => `${(value * 100).toFixed(0)} %`;
  const qualityTable = table(
    ['engine', `recall@${TOP} (document)`, `MRR@${MRR_DEPTH} (document)`, `recall@${TOP} (section)`],
    qualities.map((entry) => [
      entry.engine,
      pct(entry.recall),
      entry.mrr.toFixed(3),
      entry.sectionRecall === undefined ? '– (no sections)' : pct(entry.sectionRecall),
    ]),
  );
  const costs = [...one.costs, ...ten.costs];
  const costTable = table(
    ['engine', 'scale (documents)', 'build', 'size', 'query median', 'query p95', 'RSS Δ', 'heap Δ'],
    costs.map((cost) => [
      cost.engine,
      `${cost.scale} (${cost.documents})`,
      `${ms(cost.buildMs)} ms`,
      mib(cost.sizeBytes),
      `${ms(cost.medianMs)} ms`,
      `${ms(cost.p95Ms)} ms`,
      mib(cost.rssDelta),
      mib(cost.heapDelta),
    ]),
  );
  const notes = [
    `${questions.length} questions (bench/search-questions.json) over the Node.js API documentation of Debian's nodejs-doc; ` +
      `a document counts when it is one of a question's answers, a section when its heading is one of the answer's sections.`,
    'Build: the index from an empty file; the old search had no index (its "build" is reading the files, which it did on every call, ' +
      'so its query time includes that read); MiniSearch: parsing and adding every section. Size: the SQLite file with its WAL; ' +
      'the text held in memory; MiniSearch serialized as JSON. The index query time includes its check of the folder for changes.',
  ];
  return {
    name: 'search',
    title: 'Search: retrieval quality and cost (issue 19)',
    markdown: [qualityTable, '', costTable, '', ...notes].join('\n'),
    data: { qualities, costs },
  };
}
