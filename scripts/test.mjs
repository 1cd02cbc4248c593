// `npm test` after setup: the type check and every tier of the suite, side by side (the type check
// takes one core for a quarter of a minute, mostly while the suite bundles its workflows on the other).
// The suite's output streams as it runs; the type check's is printed after it, and either failing
// fails the run. Arguments are passed to vitest.
import { spawn } from 'node:child_process';

function run(command, args, { capture }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    let output = '';
    if (capture) {
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
    }
    child.once('error', (error) => resolve({ code: 127, output: `could not run ${command}: ${error.message}` }));
    child.once('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

const [typecheck, suite] = await Promise.all([
  run('tsc', ['--noEmit'], { capture: true }),
  run('vitest', ['run', ...process.argv.slice(2)], { capture: false }),
]);
if (typecheck.code === 0) console.log('tsc --noEmit: no type errors');
else console.error(`tsc --noEmit failed (exit ${typecheck.code}):\n${typecheck.output}`);
process.exit(typecheck.code !== 0 ? typecheck.code : suite.code);
