/**
 * The connection pool towards llama-swap: its size is GATEHOUSE_UPSTREAM_CONNECTIONS.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../../src/settings.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';

const cleanup: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c.close();
});

describe('GATEHOUSE_UPSTREAM_CONNECTIONS', () => {
  it('defaults to 1024 and takes a positive whole number', () => {
    expect(loadSettings({}).upstreamConnections).toBe(1024);
    expect(loadSettings({ GATEHOUSE_UPSTREAM_CONNECTIONS: '8' }).upstreamConnections).toBe(8);
    for (const bad of ['0', '-1', '2.5', 'many']) expect(() => loadSettings({ GATEHOUSE_UPSTREAM_CONNECTIONS: bad })).toThrowError(SettingsError);
  });

  it('caps the connections to llama-swap: with 1, a second call waits until the first has ended', async () => {
    const events: string[] = [];
    const upstream: RecordingUpstream = await startRecordingUpstream((req, res) => {
      const name = req.url!.slice(1);
      events.push(`upstream got ${name}`);
      setTimeout(() => {
        events.push(`upstream answered ${name}`);
        res.end('{}');
      }, name === 'v1/first' ? 100 : 0);
    });
    cleanup.push(upstream);
    const gateway: TestGateway = await startTestGateway(upstream.url, { upstreamConnections: 1 });
    cleanup.push(gateway);
    const first = rawRequest(`${gateway.url}/v1/first`);
    await upstream.waitFor((r) => r.url === '/v1/first');
    const second = rawRequest(`${gateway.url}/v1/second`);
    expect((await Promise.all([first, second])).map((r) => r.status)).toEqual([200, 200]);
    expect(events).toEqual(['upstream got v1/first', 'upstream answered v1/first', 'upstream got v1/second', 'upstream answered v1/second']);
  });
});
