import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/settings/index.js';
import { settingsError } from '../helpers/settings.js';

describe('admin access settings', () => {
  it('defaults: no password, no trusted proxies, 7-day sessions', () => {
    const s = loadSettings({});
    expect(s.adminPassword).toBeUndefined();
    expect(s.trustedProxies).toEqual([]);
    expect(s.sessionTtlMs).toBe(7 * 86_400_000);
  });

  it('reads GATEHOUSE_ADMIN_PASSWORD_FILE, dropping one trailing newline', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-pw-')), 'password');
    writeFileSync(file, 'a password from a file\n');
    expect(loadSettings({ GATEHOUSE_ADMIN_PASSWORD_FILE: file }).adminPassword).toBe('a password from a file');
  });

  it('refuses GATEHOUSE_ADMIN_PASSWORD and its _FILE together', () => {
    expect(
      settingsError({
        GATEHOUSE_ADMIN_PASSWORD: 'a long enough password',
        GATEHOUSE_ADMIN_PASSWORD_FILE: '/run/secrets/x',
      }),
    ).toContain('GATEHOUSE_ADMIN_PASSWORD and GATEHOUSE_ADMIN_PASSWORD_FILE are both set; set one of them');
  });

  it('refuses a password shorter than 12 characters without echoing it', () => {
    const message = settingsError({ GATEHOUSE_ADMIN_PASSWORD: 'hunter2hunt' });
    expect(message).toContain('GATEHOUSE_ADMIN_PASSWORD: must be at least 12 characters (it has 11)');
    expect(message).not.toContain('hunter2hunt');
  });

  it('names an unreadable password file', () => {
    expect(settingsError({ GATEHOUSE_ADMIN_PASSWORD_FILE: '/nonexistent/gatehouse-password' })).toContain(
      'GATEHOUSE_ADMIN_PASSWORD_FILE: cannot read /nonexistent/gatehouse-password',
    );
  });

  it('parses trusted proxies as addresses and CIDRs, and names a bad entry', () => {
    expect(loadSettings({ GATEHOUSE_TRUSTED_PROXIES: ' 127.0.0.1, 10.0.0.0/8 ,fd00::/8,::1' }).trustedProxies).toEqual([
      '127.0.0.1',
      '10.0.0.0/8',
      'fd00::/8',
      '::1',
    ]);
    for (const bad of ['10.0.0.0/33', 'proxy.local', '10.0.0.0/8/1', '::1/129', '10.0.0.0/x']) {
      expect(settingsError({ GATEHOUSE_TRUSTED_PROXIES: `127.0.0.1,${bad}` })).toContain(
        `GATEHOUSE_TRUSTED_PROXIES: "${bad}" is not an IP address or CIDR`,
      );
    }
  });

  it('takes a session TTL between 5 minutes and 30 days, with a unit', () => {
    expect(loadSettings({ GATEHOUSE_SESSION_TTL: '12h' }).sessionTtlMs).toBe(12 * 3_600_000);
    expect(settingsError({ GATEHOUSE_SESSION_TTL: '31d' })).toContain(
      'GATEHOUSE_SESSION_TTL: "31d" must be between 5m and 30d',
    );
    expect(settingsError({ GATEHOUSE_SESSION_TTL: '1m' })).toContain('must be between 5m and 30d');
    expect(settingsError({ GATEHOUSE_SESSION_TTL: '3600' })).toContain('is not a duration');
  });
});
