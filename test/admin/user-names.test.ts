/**
 * User names that look alike are one name: NFKC folds fullwidth and other compatibility forms,
 * case is folded, and invisible or control characters are refused. Through the real admin API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { api, login, PASSWORD, startAdminGateway } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, type RawResponse } from '../helpers/http.js';

const ADMIN_TOKEN = 'user-names-admin-token';
let upstream: RecordingUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  // The first admin is named `admin`.
  gateway = await startAdminGateway(upstream.url, { adminToken: ADMIN_TOKEN, adminPassword: PASSWORD });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

const asAdmin = (path: string, body: unknown): Promise<RawResponse> =>
  api(gateway, 'POST', path, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body,
  });

describe('user names', () => {
  it.each([
    ['a zero-width space', 'admin\u200b'],
    ['a right-to-left override', 'adm\u202enim'],
    ['a zero-width joiner', 'ad\u200dmin'],
    ['a byte order mark', '\ufeffadmin'],
    ['a Hangul filler', 'admin\u3164'],
    ['a tab', 'ad\tmin'],
    ['a line separator', 'ad\u2028min'],
  ])('refuses a name with %s with 422 naming the field, on creation and invitation', async (_what, name) => {
    for (const path of ['/api/users', '/api/users/invite']) {
      const res = await asAdmin(path, { name, role: 'admin' });
      expect(res.status, path).toBe(422);
      expect(json(res.body)).toMatchObject({
        error: {
          code: 'validation_failed',
          details: [
            {
              path: '/name',
              message:
                'must not contain invisible or control characters ' +
                '(zero-width, direction marks, tabs, line breaks, spaces other than U+0020)',
            },
          ],
        },
      });
    }
  });

  it.each(['ａｄｍｉｎ', 'ADMIN', 'Admin', 'ＡＤＭＩＮ'])(
    'takes %j as the existing admin: 409 on creation and invitation',
    async (name) => {
      for (const path of ['/api/users', '/api/users/invite']) {
        const res = await asAdmin(path, { name, role: 'member' });
        expect(res.status, path).toBe(409);
        expect(json(res.body)).toEqual({
          error: {
            code: 'conflict',
            message: 'A user named "admin" exists already.',
            details: [{ path: '/name', message: 'taken' }],
          },
        });
      }
    },
  );

  it('stores the NFKC form, and signs in whichever look-alike of the name is typed', async () => {
    const res = await asAdmin('/api/users', { name: 'Ｚｏë', role: 'member', password: 'zoe has a long password' });
    expect(res.status, res.body.toString()).toBe(201);
    expect((json(res.body) as { user: { name: string } }).user.name).toBe('Zoë');
    expect((await asAdmin('/api/users/invite', { name: 'zoe\u0308', role: 'viewer' })).status).toBe(409);
    await login(gateway, 'zoe has a long password', 'ZOË');
  });
});
