import type http from 'node:http';
import type net from 'node:net';

/** An HTTP server listening on a free loopback port, and how to stop it with its open connections. */
export interface LoopbackListener {
  port: number;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 and a free port; `close` also ends open (streaming) connections. */
export async function listenOnLoopback(server: http.Server): Promise<LoopbackListener> {
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
