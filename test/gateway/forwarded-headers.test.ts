/**
 * What llama-swap learns about the client through `X-Forwarded-*` on `/v1`: a reverse proxy's
 * scheme and chain are passed on only when it is in GATEHOUSE_TRUSTED_PROXIES.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';

let upstream: RecordingUpstream;
let behindProxy: TestGateway;
let direct: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  behindProxy = await startTestGateway(upstream.url, { trustedProxies: ['127.0.0.1'] });
  direct = await startTestGateway(upstream.url);
});
afterAll(async () => {
  await behindProxy.close();
  await direct.close();
  await upstream.close();
});

/** A call as a TLS-terminating proxy on 127.0.0.1 would pass it on. */
async function viaProxy(gateway: TestGateway, id: string) {
  await rawRequest(`${gateway.url}/v1/models`, {
    headers: { 'x-request-id': id, 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.7, 198.51.100.2' },
  });
  return upstream.waitFor((r) => r.headers['x-request-id'] === id);
}

describe('X-Forwarded-* on /v1', () => {
  it("passes a trusted proxy's https on as X-Forwarded-Proto, and extends its X-Forwarded-For chain", async () => {
    const seen = await viaProxy(behindProxy, 'trusted-1');
    expect(seen.headers['x-forwarded-proto']).toBe('https');
    expect(seen.headers['x-forwarded-for']).toBe('203.0.113.7, 198.51.100.2, 127.0.0.1');
  });

  it('ignores the same headers from a peer that is not a trusted proxy', async () => {
    const seen = await viaProxy(direct, 'untrusted-1');
    expect(seen.headers['x-forwarded-proto']).toBe('http');
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
  });
});
