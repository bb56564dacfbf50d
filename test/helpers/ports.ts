/** Ports for servers whose address must be known before they start (a redirect URI, a restart). */
import { createServer } from 'node:net';

/** A loopback port that was free a moment ago (the OS may hand it out again: use it at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
