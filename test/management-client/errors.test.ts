import { describe, expect, it } from 'vitest';
import { httpError, parseUpstreamErrorBody, transportError } from '../../src/management-client/errors.js';

describe('parsing llama-swap error bodies', () => {
  it('reads the current envelope with type and code', () => {
    const body =
      '{"src":"llama-swap","error":{"message":"no router for requested ' +
      'model","type":"invalid_request_error","param":null,"code":"not_found"}}';
    expect(parseUpstreamErrorBody(404, body, 'application/json')).toEqual({
      message: 'no router for requested model',
      fromLlamaSwap: true,
      routeMissing: false,
      type: 'invalid_request_error',
      code: 'not_found',
    });
  });

  it('reads the v250 string-valued error', () => {
    expect(parseUpstreamErrorBody(404, '{"src":"llama-swap","error":"model not found"}', 'application/json')).toEqual({
      message: 'model not found',
      fromLlamaSwap: true,
      routeMissing: false,
    });
  });

  it('reads llama-server errors as not coming from llama-swap', () => {
    const parsed = parseUpstreamErrorBody(
      400,
      '{"error":{"code":400,"message":"context too long","type":"invalid_request_error"}}',
      'application/json; charset=utf-8',
    );
    expect(parsed).toMatchObject({ message: 'context too long', fromLlamaSwap: false, code: '400' });
  });

  it('reads text/plain negotiation and the mux 404/405 as a missing route', () => {
    expect(parseUpstreamErrorBody(404, 'llama-swap: model not found', 'text/plain')).toMatchObject({
      message: 'model not found',
      fromLlamaSwap: true,
    });
    expect(parseUpstreamErrorBody(404, '404 page not found\n', 'text/plain; charset=utf-8')).toMatchObject({
      routeMissing: true,
    });
    expect(parseUpstreamErrorBody(405, 'Method Not Allowed\n', 'text/plain; charset=utf-8')).toMatchObject({
      routeMissing: true,
    });
  });

  it('describes the empty-bodied 502 of a dead local upstream', () => {
    const err = httpError(502, '', undefined, 'model list');
    expect(err).toMatchObject({ kind: 'http', status: 502, upstreamMessage: 'HTTP 502 with an empty body' });
    expect(err.message).toBe('llama-swap model list failed with HTTP 502: HTTP 502 with an empty body');
  });

  it('classifies transport failures by code', () => {
    expect(transportError(Object.assign(new Error('x'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 'x', false).kind).toBe(
      'timeout',
    );
    expect(transportError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 'x', false).kind).toBe(
      'unreachable',
    );
    expect(transportError(new Error('aborted'), 'x', true).kind).toBe('timeout');
  });
});
