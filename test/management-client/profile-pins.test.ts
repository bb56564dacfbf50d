import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';

let answer: { status: number; body: string } = { status: 200, body: '' };
let server: Server;
let url: URL;

beforeAll(async () => {
  server = createServer((req, res) => {
    expect(req.url).toBe('/api/profiles');
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("the active profile's pins", () => {
  const profiles = [
    { id: 'day', pins: { qwen: 'llama-3.2-3b' } },
    { id: 'night', pins: { qwen: 'qwen3-8b', fast: 'llama-3.2-3b' } },
  ];

  it('are the pins of the profile llama-swap names active', async () => {
    answer = { status: 200, body: JSON.stringify({ active: 'night', profiles }) };
    const client = createLlamaSwapClient({ baseUrl: url });
    expect(await client.activeProfilePins()).toEqual({ qwen: 'qwen3-8b', fast: 'llama-3.2-3b' });
    await client.close();
  });

  it('are none when no profile is active, or the version has no profiles', async () => {
    const client = createLlamaSwapClient({ baseUrl: url });
    answer = { status: 200, body: JSON.stringify({ active: null, profiles }) };
    expect(await client.activeProfilePins()).toEqual({});
    answer = { status: 404, body: '404 page not found' };
    expect(await client.activeProfilePins()).toEqual({});
    answer = { status: 500, body: '{"error":"boom"}' };
    await expect(client.activeProfilePins()).rejects.toThrow();
    await client.close();
  });
});
