/**
 * The child side of the bench's process handshake: a server child tells the parent its port
 * over IPC, and exits when the parent goes away (so a crashed bench leaves no orphans).
 */
import type { Server } from 'node:http';

export interface ListeningMessage {
  type: 'listening';
  port: number;
}

export function announceListening(server: Server): void {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address');
  const message: ListeningMessage = { type: 'listening', port: address.port };
  if (!process.send) throw new Error('this script is a bench child; start it through `npm run bench`');
  process.send(message);
  process.once('disconnect', () => process.exit(0));
}
