// A minimal HTTP CONNECT proxy for egress tests: tunnels bytes and records
// which targets were asked for.
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface ConnectProxy {
  address: string;
  targets: string[];
  close: () => Promise<void>;
}

export async function startConnectProxy(): Promise<ConnectProxy> {
  const targets: string[] = [];
  const server: Server = createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req, client, head) => {
    const target = req.url ?? '';
    targets.push(target);
    const [host, port] = target.split(/:(?=\d+$)/);
    const upstream = connect(Number(port), host ?? '', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
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
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
