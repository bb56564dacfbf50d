/**
 * Which connections have a response under way, so the 'clientError' answer (client-error.ts)
 * never writes its bytes into the middle of another response on the same socket.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

const answering = new WeakSet<Duplex>();

export function trackAnswer(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  answering.add(socket);
  res.once('close', () => answering.delete(socket));
}

export function isAnswering(socket: Duplex): boolean {
  return answering.has(socket);
}
