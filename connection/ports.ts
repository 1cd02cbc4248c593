import net from 'node:net';
import { TollgateError } from '../common/tollgate-error';

/** A server or address problem the user can fix; the message is one line naming the cause and the fix. */
export class ServerError extends TollgateError {
  static override readonly marker = 'tollgate.error.ServerError';
  override name = 'ServerError';
}

/** A host and port, split from an address such as `127.0.0.1:7233`. */
export function parseAddress(address: string): { host: string; port: number } {
  const match = /^(.+):(\d+)$/.exec(address);
  if (!match) throw new ServerError(`"${address}" is not a host:port address; fix temporal.address or TEMPORAL_ADDRESS`);
  return { host: match[1].replace(/^\[|\]$/g, ''), port: Number(match[2]) };
}

export function isLocalHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** Whether anything accepts TCP connections at host:port. */
export function portAnswers(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (answers: boolean) => {
      socket.destroy();
      resolve(answers);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Whether a port can be listened on, i.e. no other program holds it. */
export function portIsFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** Ports freePort chooses from: below the kernel's ephemeral range (32768–60999 on Linux), so no outgoing connection and no port a server asks the kernel for can take it between the choice and the bind. */
const CHOSEN_PORTS = { low: 10_000, high: 32_000 } as const;

/**
 * A free TCP port on the loopback interface, for servers that tests and the demo start. It is
 * chosen at random below the ephemeral range: a port the kernel hands out (port 0) may be taken
 * again at once by another process's outgoing connection or by a server that binds port 0 — a
 * dev server does so for its internal services — before the caller binds it.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = CHOSEN_PORTS.low + Math.floor(Math.random() * (CHOSEN_PORTS.high - CHOSEN_PORTS.low));
    if (await portIsFree(host, port)) return port;
  }
  throw new ServerError(`no free port between ${CHOSEN_PORTS.low} and ${CHOSEN_PORTS.high} on ${host}`);
}
