// `npm run turn`: one turn of the support agent, from the start to its answer. It uses the Temporal
// server the config names, or starts the dev server from this project's .tollgate/ (and stops it
// at the end), runs the worker in this process, and asks you at the terminal before the refund
// runs (`-- --approve` approves without asking; with no terminal and no --approve it is denied).
//   npm run turn -- [--approve] [--model <a model of tollgate.config.yaml>] [your prompt]
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import { ensureServer, loadConfig, TollgateClient, type ScriptStep } from 'tollgate';
import { startWorker } from './worker.mts';

const { values, positionals } = parseArgs({
  options: { approve: { type: 'boolean', default: false }, model: { type: 'string' } },
  allowPositionals: true,
});
const prompt = positionals.join(' ') || 'Order A-1001 arrived broken. Please refund it.';

/** What the scripted model answers, step by step: the turn runs offline, and the same way every time. */
const script: ScriptStep[] = [
  { toolCalls: [{ tool: 'lookup_order', args: { orderId: 'A-1001' } }] },
  { toolCalls: [{ tool: 'refund_order', args: { orderId: 'A-1001', cents: 4999, reason: 'arrived broken' } }] },
  { text: 'Order A-1001 (Kettle) arrived broken: I refunded the 49.99 paid.' },
];

const config = loadConfig();
const server = await ensureServer(config);
if (server.started) console.log(`Started the Temporal dev server at ${server.address} (state in ${config.temporal.devServer.dbFile}).`);
const worker = await startWorker(config);
const client = await TollgateClient.connect(config);
try {
  const result = await worker.runUntil(async () => {
    const { workflowId, runId } = await client.startTurn({
      taskId: `support-${Date.now()}`,
      prompt,
      agent: 'support',
      model: values.model ?? { provider: 'scripted', script },
    });
    console.log(`Turn ${workflowId}${server.uiUrl ? `: ${client.uiLink(server.uiUrl, { workflowId, runId })}` : ''}`);
    const ended = client.result(workflowId);
    let done = false;
    ended.then(
      () => (done = true),
      () => (done = true),
    );
    // Every irreversible call waits for a decision: look at what waits, and decide each once.
    const decided = new Set<string>();
    while (!done) {
      const state = await client.state(workflowId).catch(() => undefined);
      for (const pending of state?.pendingApprovals ?? []) {
        if (decided.has(pending.callId)) continue;
        decided.add(pending.callId);
        const approve = await ask(`${pending.tool} ${JSON.stringify(pending.args)}`);
        const options = { approver: process.env.USER ?? 'terminal', argsDigest: pending.argsDigest };
        if (approve) await client.approve(workflowId, pending.callId, options);
        else await client.deny(workflowId, pending.callId, { ...options, reason: 'denied at the terminal' });
        console.log(`${approve ? 'Approved' : 'Denied'} ${pending.tool} (${pending.callId}).`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return ended;
  });
  console.log(`Status: ${result.status}`);
  for (const call of result.toolCalls)
    console.log(`  ${call.tool}: ${call.status}${call.code ? ` (${call.code})` : ''}, ran ${call.executions} time(s)`);
  console.log(`Answer: ${result.answer ?? '(none)'}`);
  process.exitCode = result.status === 'completed' ? 0 : 1;
} finally {
  await client.close();
  await server.started?.stop();
}

/** Whether the call may run: --approve says yes; otherwise the person at the terminal decides; with neither, no. */
async function ask(call: string): Promise<boolean> {
  if (values.approve) return true;
  if (!process.stdin.isTTY) {
    console.log(`Waiting for approval: ${call}; no terminal to ask (run with -- --approve to approve).`);
    return false;
  }
  const terminal = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await terminal.question(`Approve ${call}? [y/N] `)).trim());
  } finally {
    terminal.close();
  }
}
