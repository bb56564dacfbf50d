import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { rateLimitKey } from '../../src/auth/login-rate-limit.js';
import { createProxyTrust } from '../../src/auth/proxy-trust.js';

/** Just what ProxyTrust reads from a request. */
function req(peer: string, headers: Record<string, string> = {}, encrypted = false): IncomingMessage {
  return { socket: { remoteAddress: peer, encrypted }, headers } as unknown as IncomingMessage;
}

describe('ProxyTrust', () => {
  const trust = createProxyTrust(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);

  it('matches addresses and CIDRs, IPv4-mapped IPv6 peers included', () => {
    expect(trust.trusts('127.0.0.1')).toBe(true);
    expect(trust.trusts('10.200.3.4')).toBe(true);
    expect(trust.trusts('11.0.0.1')).toBe(false);
    expect(trust.trusts('fd12:3456::1')).toBe(true);
    expect(trust.trusts('fe80::1')).toBe(false);
    expect(trust.clientAddress(req('::ffff:127.0.0.1', { 'x-forwarded-for': '198.51.100.9' }))).toBe('198.51.100.9');
  });

  it('trusts nobody when the list is empty', () => {
    const none = createProxyTrust([]);
    expect(none.trusts('127.0.0.1')).toBe(false);
    expect(none.clientAddress(req('127.0.0.1', { 'x-forwarded-for': '198.51.100.9' }))).toBe('127.0.0.1');
    expect(none.protocol(req('127.0.0.1', { 'x-forwarded-proto': 'https' }))).toBe('http');
  });

  it('takes the first untrusted X-Forwarded-For hop from the right', () => {
    expect(trust.clientAddress(req('127.0.0.1', { 'x-forwarded-for': '1.1.1.1, 203.0.113.5, 10.0.0.7' }))).toBe(
      '203.0.113.5',
    );
    expect(trust.clientAddress(req('127.0.0.1', { 'x-forwarded-for': '10.0.0.9, 10.0.0.7' }))).toBe('10.0.0.9');
    expect(trust.clientAddress(req('127.0.0.1', { 'x-forwarded-for': '[2001:db8::1]:4711, 203.0.113.5:80' }))).toBe(
      '203.0.113.5',
    );
    expect(trust.clientAddress(req('127.0.0.1'))).toBe('127.0.0.1');
  });

  it('stops at a hop that is not an address, keeping the last one it could check', () => {
    expect(trust.clientAddress(req('127.0.0.1', { 'x-forwarded-for': '203.0.113.5, unknown, 10.0.0.7' }))).toBe(
      '10.0.0.7',
    );
  });

  it('ignores forwarding headers from an untrusted peer', () => {
    const peer = req('198.51.100.1', {
      'x-forwarded-for': '203.0.113.5',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'evil.example',
      host: 'gw.local:3000',
    });
    expect(trust.clientAddress(peer)).toBe('198.51.100.1');
    expect(trust.protocol(peer)).toBe('http');
    expect(trust.origin(peer)).toBe('http://gw.local:3000');
  });

  it("builds the origin from a trusted proxy's X-Forwarded-Proto and -Host, dropping default ports", () => {
    expect(
      trust.origin(
        req('10.0.0.2', { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'GW.example:443', host: 'internal:3000' }),
      ),
    ).toBe('https://gw.example');
    expect(trust.origin(req('10.0.0.2', { 'x-forwarded-proto': 'https', host: 'gw.example' }))).toBe(
      'https://gw.example',
    );
    expect(trust.protocol(req('198.51.100.1', {}, true))).toBe('https');
  });

  it('has no origin without a usable Host', () => {
    expect(trust.origin(req('198.51.100.1'))).toBeUndefined();
    expect(trust.origin(req('198.51.100.1', { host: 'gw.example/path' }))).toBeUndefined();
    expect(trust.origin(req('198.51.100.1', { host: 'user@gw.example' }))).toBeUndefined();
  });
});

describe('rateLimitKey', () => {
  it('counts an IPv4 address as itself and an IPv6 address per /64', () => {
    expect(rateLimitKey('203.0.113.5')).toBe('203.0.113.5');
    expect(rateLimitKey('2001:db8:1:2:aaaa::1')).toBe('2001:0db8:0001:0002::/64');
    expect(rateLimitKey('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:0db8:0001:0002::/64');
    expect(rateLimitKey('2001:db8:1:3::1')).toBe('2001:0db8:0001:0003::/64');
    expect(rateLimitKey('::1')).toBe('0000:0000:0000:0000::/64');
    expect(rateLimitKey('64:ff9b::203.0.113.5')).toBe('0064:ff9b:0000:0000::/64');
  });
});
