// A minimal HTTP CONNECT proxy for egress tests: tunnels bytes and records
// which targets were asked for.
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

export interface ConnectProxy {
  address: string;
  targets: string[];
  close: () => Promise<void>;
}

/** `dial`: how it connects to a target (default: from the host; a sandbox's `net.dial` reaches inside its network namespace). */
export async function startConnectProxy(dial: (host: string, port: number) => Socket = (host, port) => connect(port, host)): Promise<ConnectProxy> {
  const targets: string[] = [];
  // Tunnels end half-open when the sidecars and apiservers are killed, and a
  // half-open socket neither keeps the event loop alive nor lets server.close()
  // finish: close() destroys every tunnel socket itself.
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const server: Server = createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req, client: Socket, head: Buffer) => {
    track(client);
    const target = req.url ?? '';
    targets.push(target);
    const [host, port] = target.split(/:(?=\d+$)/);
    let upstream: Socket;
    try {
      upstream = dial(host ?? '', Number(port));
    } catch {
      // Nowhere to dial yet (a sidecar's first health checks come before the test knows its sandbox): as a proxy would.
      client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
    track(upstream);
    const close = (): void => {
      upstream.destroy();
      client.destroy();
    };
    upstream.on('error', close);
    client.on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    targets,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
