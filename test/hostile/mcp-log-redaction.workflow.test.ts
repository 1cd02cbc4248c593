import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { mcpToolSource } from '../../tools/mcp/mcp-tool-source';
import { createWorker } from '../../worker/create-worker';
import { testConfig } from '../helpers/test-config';
import { useTimeSkippingEnvironment } from '../helpers/turn-runner';

const environment = useTimeSkippingEnvironment();
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'hostile-mcp-server.ts');

describe('what MCP servers write to a worker log', () => {
  it('reaches the log redacted: a stderr line quoting a value of redact.patterns shows [redacted]', async () => {
    const secret = `tg-secret-${randomUUID().replace(/-/g, '')}`;
    const config = testConfig({ temporal: { taskQueue: `mcp-log-${randomUUID()}` }, redact: { patterns: ['tg-secret-[0-9a-f]+'] } });
    const lines: string[] = [];
    const worker = await createWorker({
      config,
      connection: environment.env.nativeConnection,
      workflowBundle: environment.workflowBundle,
      toolSourceLog: (line) => lines.push(line),
      toolSources: [
        mcpToolSource({
          servers: {
            hostile: {
              command: process.execPath,
              args: ['--import', 'tsx', FIXTURE],
              env: {
                HOSTILE_TRANSPORT: 'stdio',
                HOSTILE_RECORD: path.join(config.workspace, 'record.jsonl'),
                HOSTILE_STDERR_SECRET: secret,
              },
            },
          },
        }),
      ],
    });
    await worker.runUntil(async () => {
      const deadline = Date.now() + 20_000;
      while (!lines.some((line) => line.includes('connecting with token')) && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
    });
    expect(lines).toContain('[mcp hostile] connecting with token [redacted]');
    expect(lines.join('\n')).not.toContain(secret);
  });
});
