/**
 * The `GATEHOUSE_OIDC_*` settings: defaults, the issuer's scheme rule, the client secret from a
 * file (never echoed), and the settings that only make sense together.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/settings/index.js';
import { settingsError } from '../helpers/settings.js';

const ISSUER = 'https://keycloak.example.com/realms/lab';
const COMPLETE = {
  GATEHOUSE_OIDC_ISSUER: ISSUER,
  GATEHOUSE_OIDC_CLIENT_ID: 'gatehouse',
  GATEHOUSE_PUBLIC_URL: 'https://llm.example.com',
};

describe('OpenID Connect settings', () => {
  it('are off by default, with the documented scopes, claim and auto-create', () => {
    const s = loadSettings({});
    expect(s.oidcIssuer).toBeUndefined();
    expect(s.oidcScopes).toEqual(['openid', 'profile', 'email']);
    expect(s.oidcRoleClaim).toBe('groups');
    expect([s.oidcAdminValues, s.oidcMemberValues, s.oidcViewerValues]).toEqual([[], [], []]);
    expect(s.oidcAutoCreate).toBe(false);
  });

  it('read comma lists of role values and space- or comma-separated scopes', () => {
    const s = loadSettings({
      ...COMPLETE,
      GATEHOUSE_OIDC_ADMIN_VALUES: 'llm-admins, LLM Owners ,',
      GATEHOUSE_OIDC_SCOPES: 'openid email,groups',
    });
    expect(s.oidcAdminValues).toEqual(['llm-admins', 'LLM Owners']);
    expect(s.oidcScopes).toEqual(['openid', 'email', 'groups']);
    expect(s.oidcIssuer?.href).toBe(`${ISSUER}`);
  });

  it('refuse a plain http issuer unless it is on this machine', () => {
    expect(settingsError({ ...COMPLETE, GATEHOUSE_OIDC_ISSUER: 'http://keycloak.lan:8080/realms/lab' })).toContain(
      'GATEHOUSE_OIDC_ISSUER: use https://',
    );
    for (const local of ['http://127.0.0.1:8080', 'http://localhost:9000/realms/lab', 'http://[::1]:8080']) {
      expect(loadSettings({ ...COMPLETE, GATEHOUSE_OIDC_ISSUER: local }).oidcIssuer?.origin).toBe(
        new URL(local).origin,
      );
    }
  });

  it('refuse scopes without openid', () => {
    expect(settingsError({ ...COMPLETE, GATEHOUSE_OIDC_SCOPES: 'profile email' })).toContain('must include openid');
  });

  it('need the client ID and the public URL with an issuer, and an issuer with a client ID', () => {
    expect(settingsError({ GATEHOUSE_OIDC_ISSUER: ISSUER })).toMatch(
      /GATEHOUSE_OIDC_CLIENT_ID is not[\s\S]*GATEHOUSE_PUBLIC_URL is not; the redirect URI is <GATEHOUSE_PUBLIC_URL>\/api\/oidc\/callback/,
    );
    expect(settingsError({ GATEHOUSE_OIDC_CLIENT_ID: 'gatehouse' })).toContain(
      'GATEHOUSE_OIDC_CLIENT_ID is set but GATEHOUSE_OIDC_ISSUER is not',
    );
  });

  it('read the client secret from GATEHOUSE_OIDC_CLIENT_SECRET_FILE, never echo it, and refuse both at once', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gh-oidc-')), 'secret');
    writeFileSync(file, 'the-client-secret\n');
    expect(loadSettings({ ...COMPLETE, GATEHOUSE_OIDC_CLIENT_SECRET_FILE: file }).oidcClientSecret).toBe(
      'the-client-secret',
    );
    const message = settingsError({
      ...COMPLETE,
      GATEHOUSE_OIDC_CLIENT_SECRET: 'the-client-secret',
      GATEHOUSE_OIDC_CLIENT_SECRET_FILE: file,
    });
    expect(message).toContain(
      'GATEHOUSE_OIDC_CLIENT_SECRET and GATEHOUSE_OIDC_CLIENT_SECRET_FILE are both set; set one of them',
    );
    expect(message).not.toContain('the-client-secret');
  });
});
