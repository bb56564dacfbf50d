import { describe, expect, it } from 'vitest';
import {
  clientResponseHeaders,
  saneRequestId,
  upstreamRequestHeaders,
  type ForwardingFacts,
} from '../../src/proxy/headers.js';

const FACTS: ForwardingFacts = {
  requestId: 'req-1',
  clientAddress: '203.0.113.7',
  proto: 'http',
  priorForwardedFor: undefined,
  upstreamApiKey: undefined,
  contentLength: 17,
};

describe('headers sent upstream', () => {
  it('passes the request headers through and adds exactly the forwarding headers', () => {
    const out = upstreamRequestHeaders(
      {
        host: 'gateway.example:8443',
        'content-type': 'application/json',
        accept: 'text/event-stream',
        'user-agent': 'sdk/1.0',
        'x-custom': ['a', 'b'],
      },
      FACTS,
    );
    expect(out).toEqual({
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'user-agent': 'sdk/1.0',
      'x-custom': ['a', 'b'],
      'content-length': '17',
      'accept-encoding': 'identity',
      'x-request-id': 'req-1',
      'x-forwarded-for': '203.0.113.7',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'gateway.example:8443',
    });
  });

  it('never forwards a client credential, in any of the headers a client may put one in', () => {
    const out = upstreamRequestHeaders(
      {
        authorization: 'Bearer gh_client_secret',
        'x-api-key': 'sk-ant-client',
        'api-key': 'azure-client',
        cookie: 'gh_session=abc',
        'content-type': 'application/json',
      },
      FACTS,
    );
    expect(Object.keys(out).sort()).toEqual([
      'accept-encoding',
      'content-length',
      'content-type',
      'x-forwarded-for',
      'x-forwarded-proto',
      'x-request-id',
    ]);
    expect(JSON.stringify(out)).not.toMatch(/client|abc/);
  });

  it("sends the gateway's own upstream key as the only Authorization", () => {
    const out = upstreamRequestHeaders(
      { authorization: 'Bearer gh_client_secret' },
      { ...FACTS, upstreamApiKey: 'llama-swap-key' },
    );
    expect(out.authorization).toBe('Bearer llama-swap-key');
  });

  it('drops hop-by-hop headers and every header the Connection header names', () => {
    const out = upstreamRequestHeaders(
      {
        connection: 'keep-alive, X-Drop-Me,  x-also-dropped',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic cHJveHk=',
        'proxy-connection': 'keep-alive',
        te: 'trailers',
        trailer: 'x-checksum',
        'transfer-encoding': 'chunked',
        upgrade: 'websocket',
        'x-drop-me': '1',
        'x-also-dropped': '2',
        'x-kept': '3',
      },
      { ...FACTS, contentLength: undefined },
    );
    expect(out).toEqual({
      'x-kept': '3',
      'accept-encoding': 'identity',
      'x-request-id': 'req-1',
      'x-forwarded-for': '203.0.113.7',
      'x-forwarded-proto': 'http',
    });
  });

  it('replaces what the client claims in the headers the gateway sets', () => {
    const out = upstreamRequestHeaders(
      {
        'x-forwarded-for': '10.0.0.1',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'evil.example',
        'x-request-id': 'client-chosen',
        'accept-encoding': 'gzip, br',
        'content-length': '999999',
      },
      FACTS,
    );
    expect(out).toEqual({
      'content-length': '17',
      'accept-encoding': 'identity',
      'x-request-id': 'req-1',
      'x-forwarded-for': '203.0.113.7',
      'x-forwarded-proto': 'http',
    });
  });

  it('appends the client address to the X-Forwarded-For of a trusted proxy', () => {
    const out = upstreamRequestHeaders(
      { 'x-forwarded-for': 'ignored' },
      { ...FACTS, proto: 'https', priorForwardedFor: '198.51.100.1, 10.0.0.2' },
    );
    expect(out['x-forwarded-for']).toBe('198.51.100.1, 10.0.0.2, 203.0.113.7');
    expect(out['x-forwarded-proto']).toBe('https');
  });

  it('sends no Content-Length when the body length is unknown, so the body goes chunked', () => {
    const out = upstreamRequestHeaders({ 'content-length': '5' }, { ...FACTS, contentLength: undefined });
    expect(out).not.toHaveProperty('content-length');
  });
});

describe('headers sent back to the client', () => {
  it('passes response headers through except hop-by-hop and CORS ones', () => {
    const out = clientResponseHeaders({
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-request-id': 'req-1',
      connection: 'keep-alive',
      'keep-alive': 'timeout=5',
      'transfer-encoding': 'chunked',
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      'set-cookie': ['a=1', 'b=2'],
      'x-missing': undefined,
    });
    expect(out).toEqual({
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-request-id': 'req-1',
      'set-cookie': ['a=1', 'b=2'],
    });
  });

  it('drops the headers the upstream Connection header names', () => {
    const out = clientResponseHeaders({
      connection: ['close', 'X-Internal'],
      'x-internal': 'secret',
      'content-length': '2',
    });
    expect(out).toEqual({ 'content-length': '2' });
  });
});

describe('client request ids', () => {
  it('keeps a short id made of safe characters', () => {
    for (const id of ['abc', 'req-1.2_3:4', 'A'.repeat(128), '0b9e7c2e-1f0a-4c55-9d3a-2f5e0c6b7a10'])
      expect(saneRequestId(id)).toBe(id);
  });

  it('ignores an id that could forge or flood a log line', () => {
    for (const id of ['', 'A'.repeat(129), 'a b', 'line\nbreak', 'x"y', '{"json":1}', 'ünïcode', 'semi;colon'])
      expect(saneRequestId(id)).toBeUndefined();
  });

  it('ignores a missing or repeated header', () => {
    expect(saneRequestId(undefined)).toBeUndefined();
    expect(saneRequestId(['a', 'b'])).toBeUndefined();
  });
});
