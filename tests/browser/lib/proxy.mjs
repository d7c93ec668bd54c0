// A TCP proxy on 127.0.0.1 between a client and the gateway that can cut every
// live connection at once, as a flaky network or a restarted load balancer would.
import net from 'node:net';

export async function startProxy(targetPort) {
  const live = new Set();  // {client, upstream}
  let accepted = 0;
  let cuts = 0;
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    const pair = { client, upstream };
    live.add(pair);
    const drop = () => {
      live.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  function destroyAll() {
    const n = live.size;
    for (const pair of [...live]) {
      live.delete(pair);
      for (const socket of [pair.client, pair.upstream]) {
        try { socket.resetAndDestroy(); } catch { socket.destroy(); }
      }
    }
    return n;
  }
  const port = server.address().port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    get accepted() { return accepted; },
    get cuts() { return cuts; },
    get liveConnections() { return live.size; },
    // Destroys every live connection: the client side with a TCP RST (an abrupt
    // network failure, not a clean end of the response), the gateway side too.
    cutAll() {
      cuts++;
      return destroyAll();
    },
    async close() {
      destroyAll();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
