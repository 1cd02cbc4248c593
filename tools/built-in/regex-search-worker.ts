import { Worker } from 'node:worker_threads';

/** How often a pattern matched one document's title and content, and where it first matched the content (-1: nowhere). */
export interface MatchCount {
  inTitle: number;
  inContent: number;
  firstIndex: number;
}

/** The text a regular expression is matched against. */
export interface MatchTarget {
  title: string;
  content: string;
}

/**
 * The worker thread's code, plain CommonJS so that it runs the same under any TypeScript loader.
 * It counts the matches of one case-insensitive pattern in every document and posts the counts back.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
function count(pattern, text) {
  pattern.lastIndex = 0;
  let matches = 0;
  let firstIndex = -1;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    if (firstIndex === -1) firstIndex = match.index;
    matches++;
    if (match[0] === '') pattern.lastIndex++;
  }
  return { matches, firstIndex };
}
const pattern = new RegExp(workerData.source, 'gi');
parentPort.postMessage(workerData.documents.map(({ title, content }) => {
  const inContent = count(pattern, content);
  return { inTitle: count(pattern, title).matches, inContent: inContent.matches, firstIndex: inContent.firstIndex };
}));
`;

/**
 * Counts the matches of a case-insensitive regular expression in every document on a worker
 * thread, so that a pattern that backtracks without end never blocks the event loop. The thread
 * is terminated as soon as `signal` aborts (the call's timeout or cancellation), and the promise
 * then rejects with the signal's reason.
 */
export function countRegexMatches(source: string, documents: readonly MatchTarget[], signal: AbortSignal): Promise<MatchCount[]> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<MatchCount[]>((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { source, documents: documents.map(({ title, content }) => ({ title, content })) },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const finish = (end: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      end();
    };
    const onAbort = () => finish(() => reject(signal.reason));
    signal.addEventListener('abort', onAbort);
    worker.once('message', (counts: MatchCount[]) => finish(() => resolve(counts)));
    worker.once('error', (error) => finish(() => reject(new Error(`the regular expression search failed: ${error.message}`))));
    worker.once('exit', (code) => finish(() => reject(new Error(`the regular expression search stopped (exit code ${code}) before it answered`))));
  });
}
