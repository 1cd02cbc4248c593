// Runs hostile shell commands through the sandboxed `shell` tool and prints what happened as one JSON line. The test
// shell-unprivileged.test.ts starts it as an unprivileged user; its first argument is the workspace.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { openSqliteStore } from '../../intents/sqlite-store';
import { createRunTool } from '../../activities/boundary/run-tool';
import { createToolRegistry } from '../../tools/tool-registry';
import { shellTool } from '../../tools/built-in/shell';
import { runToolOnce } from '../helpers/run-tool-once';

const PROBE_INTERVAL_MS = 50;

function descendantCount(): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // Ended while being read.
    }
  }
  let count = 0;
  const queue = [process.pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      count += 1;
      queue.push(child);
    }
  }
  return count;
}

async function main(): Promise<void> {
  const workspace = process.argv[2];
  if (!workspace) throw new Error('usage: shell-as-user.ts <workspace>');
  const lines: string[] = [];
  const tool = shellTool({ workspace, sandbox: true, log: (line) => lines.push(line), warn: (line) => lines.push(line) });
  const registry = createToolRegistry({ tools: [tool], overrides: { shell: { timeout: '4s' } } });
  const runTool = createRunTool({ registry, store: openSqliteStore(':memory:') });
  let calls = 0;
  const run = (command: string) =>
    runToolOnce(runTool, { taskId: 'as-user', callId: `call-${calls++}`, tool: 'shell', args: { command } }).then(
      (result) => JSON.stringify(result),
      (error: Error) => `${error.name}: ${error.message}`,
    );
  let last = performance.now();
  let worstDelayMs = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    worstDelayMs = Math.max(worstDelayMs, now - last - PROBE_INTERVAL_MS);
    last = now;
  }, PROBE_INTERVAL_MS);
  let peakProcesses = 0;
  const sampler = setInterval(() => {
    peakProcesses = Math.max(peakProcesses, descendantCount());
  }, 100);
  const forkBombStarted = performance.now();
  const forkBomb = await run(':(){ :|:& };:; sleep 30');
  const forkBombMs = performance.now() - forkBombStarted;
  clearInterval(sampler);
  const report = {
    uid: process.getuid?.(),
    pid: process.pid,
    lines,
    identity: await run('id -u; grep -E "^Cap(Prm|Eff|Bnd|Amb):" /proc/self/status'),
    environment: await run('env; env | base64 -w0; exit 0'),
    outside: await run(`touch /var/tmp/tollgate-as-user-${process.pid} ../outside/written /etc/tollgate-as-user; mount -o remount,rw /; :`),
    forkBomb,
    forkBombMs,
    peakProcesses,
    output: await run("head -c 100000000 /dev/zero | tr '\\0' a"),
    fill: await run('head -c 200000000 /dev/zero > big'),
    bigBytes: statSync(path.join(workspace, 'big')).size,
    after: await run('echo still-serving'),
    leftProcesses: descendantCount(),
    worstDelayMs,
  };
  clearInterval(probe);
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
