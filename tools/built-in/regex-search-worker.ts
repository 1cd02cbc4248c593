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

/** What a search thread answers: the counts, one per document, or why the pattern failed. */
type ThreadAnswer = { counts: MatchCount[] } | { error: string };

/**
 * The search thread's code, plain CommonJS so that it runs the same under any TypeScript loader.
 * For each request it counts the matches of one case-insensitive pattern in every document.
 */
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
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
parentPort.on('message', ({ source, documents }) => {
  try {
    const pattern = new RegExp(source, 'gi');
    parentPort.postMessage({ counts: documents.map(({ title, content }) => {
      const inContent = count(pattern, content);
      return { inTitle: count(pattern, title).matches, inContent: inContent.matches, firstIndex: inContent.firstIndex };
    }) });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
  }
});
`;

/** Threads kept ready between searches, so that most searches skip a thread's start-up. */
const MAX_IDLE_THREADS = 2;
const idleThreads: Worker[] = [];

/** An idle thread, or a new one; it keeps the process alive while it works. */
function takeThread(): Worker {
  const thread = idleThreads.pop()?.removeAllListeners('exit') ?? new Worker(THREAD_SOURCE, { eval: true, stdout: true, stderr: true });
  thread.ref();
  return thread;
}

/** Keeps a thread that answered for the next search; an idle thread never keeps the process alive. */
function returnThread(thread: Worker): void {
  thread.removeAllListeners('message').removeAllListeners('error').removeAllListeners('exit');
  if (idleThreads.length >= MAX_IDLE_THREADS) {
    void thread.terminate();
    return;
  }
  thread.unref();
  // An idle thread that dies (out of memory, say) is simply forgotten.
  thread.once('exit', () => idleThreads.splice(idleThreads.indexOf(thread), 1));
  idleThreads.push(thread);
}

/**
 * Counts the matches of a case-insensitive regular expression in every document on a worker
 * thread, so that a pattern that backtracks without end never blocks the event loop. The thread
 * is terminated as soon as `signal` aborts (the call's timeout or cancellation), and the promise
 * then rejects with the signal's reason; a thread that answered is kept for the next search.
 */
export function countRegexMatches(source: string, documents: readonly MatchTarget[], signal: AbortSignal): Promise<MatchCount[]> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<MatchCount[]>((resolve, reject) => {
    const thread = takeThread();
    let settled = false;
    const finish = (keep: boolean, end: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (keep) returnThread(thread);
      else void thread.terminate();
      end();
    };
    const onAbort = () => finish(false, () => reject(signal.reason));
    signal.addEventListener('abort', onAbort);
    thread.once('message', (answer: ThreadAnswer) =>
      'counts' in answer
        ? finish(true, () => resolve(answer.counts))
        : finish(true, () => reject(new Error(`the regular expression failed: ${answer.error}`))),
    );
    thread.once('error', (error) => finish(false, () => reject(new Error(`the regular expression search failed: ${error.message}`))));
    thread.once('exit', (code) =>
      finish(false, () => reject(new Error(`the regular expression search stopped (exit code ${code}) before it answered`))),
    );
    thread.postMessage({ source, documents: documents.map(({ title, content }) => ({ title, content })) });
  });
}
