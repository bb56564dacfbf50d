import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadSettings, SETTINGS, SettingsError } from '../../src/settings/index.js';
import { settingsError } from '../helpers/settings.js';

describe('settings', () => {
  it('uses the documented defaults when nothing is set', () => {
    const s = loadSettings({}, {}, '/srv/gh');
    expect(s).toMatchObject({
      host: '0.0.0.0',
      port: 3000,
      connectTimeoutMs: 10_000,
      headersTimeoutMs: 600_000,
      idleTimeoutMs: 300_000,
      bodyLimitBytes: 50 * 1024 * 1024,
      shutdownGraceMs: 30_000,
      dataDir: '/srv/gh/data',
    });
    expect(s.upstreamUrl.href).toBe('http://127.0.0.1:8080/');
    expect(Object.isFrozen(s)).toBe(true);
  });

  it('lets flags win over environment variables', () => {
    const s = loadSettings({ PORT: '4000', GATEHOUSE_UPSTREAM_URL: 'http://a:1' }, { '--port': '5000' });
    expect(s.port).toBe(5000);
    expect(s.upstreamUrl.origin).toBe('http://a:1');
  });

  it('reports every invalid value at once and never guesses a unit', () => {
    expect(() =>
      loadSettings({ PORT: 'x', GATEHOUSE_IDLE_TIMEOUT: '300', GATEHOUSE_UPSTREAM_URL: 'ftp://x' }),
    ).toThrowError(SettingsError);
    try {
      loadSettings({ PORT: 'x', GATEHOUSE_IDLE_TIMEOUT: '300', GATEHOUSE_UPSTREAM_URL: 'ftp://x' });
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toContain('PORT');
      expect(message).toContain('GATEHOUSE_IDLE_TIMEOUT: "300" is not a duration');
      expect(message).toContain('GATEHOUSE_UPSTREAM_URL');
    }
  });

  it('hashes admin passwords at the production scrypt cost unless told otherwise', () => {
    expect(loadSettings({}).passwordHashCost).toEqual({ N: 2 ** 15, r: 8, p: 3 });
    expect(loadSettings({ GATEHOUSE_PASSWORD_HASH_COST: 'N=1024,r=8,p=1' }).passwordHashCost).toEqual({
      N: 1024,
      r: 8,
      p: 1,
    });
  });

  it('refuses a password hash cost that is malformed, not a power of two, below N=1024 or over 1 GiB', () => {
    for (const [raw, why] of [
      ['32768,8,3', 'is not N=<power of two>,r=<n>,p=<n>'],
      ['N=1000,r=8,p=1', 'N must be a power of two'],
      ['N=512,r=8,p=1', 'N must be at least 1024'],
      ['N=1024,r=0,p=1', 'r and p must be at least 1'],
      ['N=1048576,r=16,p=1', 'more than 1 GiB per hash'],
    ]) {
      expect(settingsError({ GATEHOUSE_PASSWORD_HASH_COST: raw! }), raw).toContain(why);
    }
  });

  it('documents every setting in docs/configuration.md', () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    for (const spec of SETTINGS) {
      expect(doc, spec.env).toContain(`\`${spec.env}\``);
      if (spec.flag) expect(doc, spec.flag).toContain(`\`${spec.flag}\``);
    }
  });
});
