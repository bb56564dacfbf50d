/**
 * An in-memory admin API that follows docs/admin-api.md, for rendering the dashboard's pages
 * and their states (unreachable llama-swap, last-key deletion, log gaps) before or without the
 * real backend. End-to-end tests against the real gateway do not use it.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { demoUsage, registerFakeUsageApi, type FakeUsageState } from './fake-usage.js';
import type { KeyBudget } from '../../src/admin-api/types.js';

export interface FakeModel {
  id: string;
  name: string | null;
  description: string | null;
  kind: 'model' | 'alias' | 'peer';
  aliases: string[];
  peerId: string | null;
  unlisted: boolean;
  state: 'starting' | 'ready' | 'stopping' | 'stopped';
  ttl: number | null;
}

export interface FakeKey {
  id: string;
  name: string;
  prefix: string;
  status: 'active' | 'revoked' | 'expired';
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  models: string[];
  note: string;
  limits: { rpm: number | null; tpm: number | null; concurrent: number | null };
  priority: number;
  manage: boolean;
  budget: KeyBudget;
  ownerId: string | null;
  ownerName: string | null;
}

/** What every fake key has unless it says otherwise: no budget, no manage scope, no owner. */
const KEY_DEFAULTS = {
  manage: false,
  budget: { tokens: null, requests: null, gpuSeconds: null, period: 'day' },
  ownerId: null,
  ownerName: null,
} satisfies Partial<FakeKey>;

export interface FakeState extends FakeUsageState {
  password: string | null;
  setupToken: string;
  upstreamReachable: boolean;
  models: FakeModel[];
  keys: FakeKey[];
  logs: Record<string, string>;
  /** Delay before a loading model becomes ready. */
  loadMs: number;
}

export interface FakeAdminApi {
  state: FakeState;
  /** Sends `text` to every open stream of `source`. */
  emitLog(source: string, text: string): void;
  /** Sends a `gap` event to every open stream of `source` (a llama-swap config reload). */
  emitGap(source: string): void;
  /** Ends every open log stream (the browser sees an error and must reconnect). */
  dropStreams(): void;
  /** Ends every session, as a sign-out elsewhere does; open live streams are closed (as the gateway's recheck does). */
  endSessions(): void;
  requests: string[];
}

const now = Date.now();
const iso = (offsetMs: number) => new Date(now + offsetMs).toISOString();

function demoModels(): FakeModel[] {
  return [
    {
      id: 'qwen3-30b-a3b',
      name: 'Qwen3 30B A3B',
      description: 'General chat and tools, Q4_K_M, 32k context',
      kind: 'model',
      aliases: ['qwen', 'gpt-4o-mini'],
      peerId: null,
      unlisted: false,
      state: 'ready',
      ttl: 600,
    },
    {
      id: 'gemma-3-12b',
      name: 'Gemma 3 12B',
      description: 'Vision, Q5_K_M',
      kind: 'model',
      aliases: [],
      peerId: null,
      unlisted: false,
      state: 'starting',
      ttl: 300,
    },
    {
      id: 'nomic-embed-text',
      name: null,
      description: 'Embeddings',
      kind: 'model',
      aliases: ['embed'],
      peerId: null,
      unlisted: false,
      state: 'stopped',
      ttl: null,
    },
    {
      id: 'whisper-large-v3',
      name: 'Whisper large v3',
      description: 'Speech to text',
      kind: 'model',
      aliases: [],
      peerId: null,
      unlisted: true,
      state: 'stopped',
      ttl: 120,
    },
    {
      id: 'qwen',
      name: null,
      description: null,
      kind: 'alias',
      aliases: [],
      peerId: null,
      unlisted: false,
      state: 'ready',
      ttl: 600,
    },
    {
      id: 'gpt-4o-mini',
      name: null,
      description: null,
      kind: 'alias',
      aliases: [],
      peerId: null,
      unlisted: false,
      state: 'ready',
      ttl: 600,
    },
    {
      id: 'embed',
      name: null,
      description: null,
      kind: 'alias',
      aliases: [],
      peerId: null,
      unlisted: false,
      state: 'stopped',
      ttl: null,
    },
    {
      id: 'llama-3.3-70b',
      name: 'Llama 3.3 70B',
      description: 'On the workstation upstairs',
      kind: 'peer',
      aliases: [],
      peerId: 'workstation',
      unlisted: false,
      state: 'stopped',
      ttl: null,
    },
  ];
}

export function demoKeys(): FakeKey[] {
  const limits = { rpm: null, tpm: null, concurrent: null };
  const keys: Array<Omit<FakeKey, keyof typeof KEY_DEFAULTS>> = [
    {
      id: 'key_01',
      name: 'open-webui',
      prefix: 'sk-gh7Qx2',
      status: 'active',
      createdAt: iso(-40 * 86_400_000),
      lastUsedAt: iso(-3 * 60_000),
      expiresAt: null,
      revokedAt: null,
      models: [],
      note: 'Family chat on the NAS',
      limits: { rpm: 120, tpm: 200_000, concurrent: 4 },
      priority: 0,
    },
    {
      id: 'key_02',
      name: 'home-assistant',
      prefix: 'sk-Pw91aZ',
      status: 'active',
      createdAt: iso(-12 * 86_400_000),
      lastUsedAt: iso(-5 * 3_600_000),
      expiresAt: iso(80 * 86_400_000),
      revokedAt: null,
      models: ['qwen', 'whisper-large-v3'],
      note: '',
      limits,
      priority: 0,
    },
    {
      id: 'key_03',
      name: 'laptop (Claude Code)',
      prefix: 'sk-Lm3c0Q',
      status: 'active',
      createdAt: iso(-2 * 86_400_000),
      lastUsedAt: null,
      expiresAt: iso(28 * 86_400_000),
      revokedAt: null,
      models: ['qwen3-30b-a3b', 'gemma-3-12b', 'nomic-embed-text', 'embed'],
      note: 'Work laptop',
      limits: { rpm: 30, tpm: null, concurrent: null },
      priority: 0,
    },
    {
      id: 'key_04',
      name: 'old-script',
      prefix: 'sk-Zz00kk',
      status: 'revoked',
      createdAt: iso(-90 * 86_400_000),
      lastUsedAt: iso(-31 * 86_400_000),
      expiresAt: null,
      revokedAt: iso(-30 * 86_400_000),
      models: [],
      note: 'Leaked in a gist',
      limits,
      priority: 0,
    },
    {
      id: 'key_05',
      name: 'trial',
      prefix: 'sk-Tr1a1x',
      status: 'expired',
      createdAt: iso(-60 * 86_400_000),
      lastUsedAt: iso(-45 * 86_400_000),
      expiresAt: iso(-30 * 86_400_000),
      revokedAt: null,
      models: ['gemma-3-12b'],
      note: '',
      limits,
      priority: 0,
    },
  ];
  return keys.map((key) => ({ ...KEY_DEFAULTS, ...key }));
}

const ESC = '\u001b[';
function demoProxyLog(): string {
  const lines = [
    `${ESC}2m[2026-11-21 21:40:01]${ESC}0m ${ESC}32mINFO${ESC}0m llama-swap listening on :8080`,
    `${ESC}2m[2026-11-21 21:40:03]${ESC}0m ${ESC}32mINFO${ESC}0m <qwen3-30b-a3b> starting: llama-server ` +
      `--port 5800 -m /models/qwen3-30b-a3b-q4_k_m.gguf`,
    `${ESC}2m[2026-11-21 21:40:09]${ESC}0m ${ESC}32mINFO${ESC}0m <qwen3-30b-a3b> health check passed in 5.8s`,
    `${ESC}2m[2026-11-21 21:40:10]${ESC}0m ${ESC}36mDEBUG${ESC}0m POST /v1/chat/completions 200 ${ESC}1m1.92s${ESC}0m`,
    `${ESC}2m[2026-11-21 21:41:12]${ESC}0m ${ESC}33mWARN${ESC}0m <gemma-3-12b> swap requested while ` +
      `qwen3-30b-a3b busy; waiting`,
    `${ESC}2m[2026-11-21 21:41:15]${ESC}0m ${ESC}31;1mERROR${ESC}0m <whisper-large-v3> exited with code 1 ` +
      `(${ESC}4mout of memory${ESC}24m)`,
    `${ESC}2m[2026-11-21 21:41:16]${ESC}0m ${ESC}38;5;208mNOTE${ESC}0m 256-colour and ` +
      `${ESC}38;2;120;160;255mtrue-colour${ESC}0m text render too`,
    `${ESC}2m[2026-11-21 21:41:20]${ESC}0m ${ESC}32mINFO${ESC}0m <gemma-3-12b> starting: llama-server ` +
      `--port 5801 -m /models/gemma-3-12b-q5_k_m.gguf --mmproj /models/mmproj.gguf`,
  ];
  return `${lines.join('\n')}\n`;
}

export function registerFakeAdminApi(app: FastifyInstance, initial: Partial<FakeState> = {}): FakeAdminApi {
  const state: FakeState = {
    password: 'correct horse battery',
    setupToken: 'setup-token-123',
    upstreamReachable: true,
    models: demoModels(),
    keys: demoKeys(),
    logs: { proxy: demoProxyLog(), upstream: '', gateway: '' },
    loadMs: 1500,
    usage: demoUsage(),
    limitsInfo: { limitsScope: 'replica', redis: 'off', unavailableSince: null },
    usageDown: false,
    ...initial,
  };
  const sessions = new Set<string>();
  const streams = new Map<string, Set<ServerResponse>>();
  const requests: string[] = [];

  const fail = (reply: FastifyReply, status: number, code: string, message: string, details?: unknown) =>
    reply.code(status).send({ error: { code, message, ...(details === undefined ? {} : { details }) } });

  const sessionOf = (request: FastifyRequest) =>
    /(?:^|;\s*)gatehouse_session=([^;]+)/.exec(request.headers.cookie ?? '')?.[1];
  const authed = (request: FastifyRequest) => {
    const id = sessionOf(request);
    return id !== undefined && sessions.has(id);
  };
  const startSession = (reply: FastifyReply) => {
    const id = randomBytes(16).toString('hex');
    sessions.add(id);
    void reply.header('set-cookie', `gatehouse_session=${id}; Path=/; HttpOnly; SameSite=Strict`);
  };

  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/api/')) return;
    requests.push(`${request.method} ${request.url}`);
    const path = request.url.split('?')[0] ?? '';
    const isPublic = ['/api/session', '/api/setup', '/api/login'].includes(path);
    if (!isPublic && !authed(request)) return fail(reply, 401, 'admin_unauthorized', 'Admin authentication required.');
  });

  app.get('/api/session', async (request) => ({
    authenticated: authed(request),
    setupRequired: state.password === null,
    via: authed(request) ? 'session' : null,
    // The one operator of this fake is the first admin.
    user: authed(request)
      ? {
          id: 'usr_fakeadmin01',
          name: 'admin',
          email: null,
          role: 'admin',
          signIn: 'password',
          status: 'active',
          createdAt: '2030-01-01T00:00:00.000Z',
          disabledAt: null,
          allowedModels: [],
          maxBudget: null,
        }
      : null,
    role: authed(request) ? 'admin' : null,
  }));

  app.post('/api/setup', async (request, reply) => {
    const body = request.body as { token?: string; password?: string };
    if (state.password !== null) return fail(reply, 409, 'conflict', 'An admin password already exists.');
    if (body.token !== state.setupToken) return fail(reply, 403, 'admin_forbidden', 'Forbidden.');
    if (typeof body.password !== 'string' || body.password.length < 12)
      return fail(reply, 422, 'validation_failed', 'Validation failed.', [
        { path: '/password', message: 'must be at least 12 characters' },
      ]);
    state.password = body.password;
    startSession(reply);
    return { authenticated: true };
  });

  app.post('/api/login', async (request, reply) => {
    const body = request.body as { password?: string };
    if (state.password === null || body.password !== state.password)
      return fail(reply, 401, 'admin_unauthorized', 'Wrong password.');
    startSession(reply);
    return { authenticated: true };
  });

  app.post('/api/logout', async (request, reply) => {
    const id = sessionOf(request);
    if (id) sessions.delete(id);
    void reply.header('set-cookie', 'gatehouse_session=; Path=/; Max-Age=0');
    return { authenticated: false };
  });

  app.post('/api/password', async (request, reply) => {
    const body = request.body as { currentPassword?: string; newPassword?: string };
    if (body.currentPassword !== state.password) return fail(reply, 401, 'admin_unauthorized', 'Wrong password.');
    if (typeof body.newPassword !== 'string' || body.newPassword.length < 12)
      return fail(reply, 422, 'validation_failed', 'Validation failed.', [
        { path: '/newPassword', message: 'must be at least 12 characters' },
      ]);
    state.password = body.newPassword;
    const current = sessionOf(request);
    for (const id of [...sessions]) if (id !== current) sessions.delete(id);
    return {};
  });

  app.get('/api/keys', async () => ({ keys: state.keys }));
  app.get('/api/endpoints', async () => ({ publicUrl: null, apiOpen: state.keys.length === 0 }));

  app.post('/api/keys', async (request, reply) => {
    const body = request.body as {
      name?: string;
      models?: string[];
      expiresAt?: string | null;
      note?: string;
      limits?: Partial<FakeKey['limits']>;
      priority?: number;
      manage?: boolean;
      budget?: Partial<KeyBudget>;
    };
    if (!body.name?.trim())
      return fail(reply, 422, 'validation_failed', 'Validation failed.', [{ path: '/name', message: 'required' }]);
    const secret = `sk-${randomBytes(24).toString('base64url')}`;
    const key: FakeKey = {
      id: `key_${randomBytes(4).toString('hex')}`,
      name: body.name.trim(),
      prefix: secret.slice(0, 9),
      status: 'active',
      createdAt: new Date().toISOString(),
      lastUsedAt: null,
      expiresAt: body.expiresAt ?? null,
      revokedAt: null,
      models: body.models ?? [],
      note: body.note ?? '',
      limits: { rpm: null, tpm: null, concurrent: null, ...body.limits },
      priority: body.priority ?? 0,
      ...KEY_DEFAULTS,
      manage: body.manage ?? false,
      budget: { ...KEY_DEFAULTS.budget, ...body.budget },
    };
    state.keys.unshift(key);
    return reply.code(201).send({ key, secret });
  });

  app.patch('/api/keys/:id', async (request, reply) => {
    const key = state.keys.find((k) => k.id === (request.params as { id: string }).id);
    if (!key) return fail(reply, 404, 'not_found', 'No such key.');
    const body = request.body as Partial<FakeKey> & { revoked?: boolean };
    if (body.name !== undefined) key.name = body.name;
    if (body.models !== undefined) key.models = body.models;
    if (body.expiresAt !== undefined) key.expiresAt = body.expiresAt;
    if (body.note !== undefined) key.note = body.note;
    if (body.limits !== undefined) key.limits = { ...key.limits, ...body.limits };
    if (body.priority !== undefined) key.priority = body.priority;
    if (body.manage !== undefined) key.manage = body.manage;
    if (body.budget !== undefined) key.budget = { ...key.budget, ...body.budget };
    if (body.revoked) {
      key.status = 'revoked';
      key.revokedAt = new Date().toISOString();
    }
    return { key };
  });

  app.delete('/api/keys/:id', async (request, reply) => {
    const id = (request.params as { id: string }).id;
    const key = state.keys.find((k) => k.id === id);
    if (!key) return fail(reply, 404, 'not_found', 'No such key.');
    if (state.keys.length === 1 && (request.query as { confirm?: string }).confirm !== 'last') {
      return fail(
        reply,
        409,
        'conflict',
        `${key.id} is the last API key. Deleting it reopens the API: every client will be let in without a ` +
          `key. Repeat the request with ?confirm=last (or header "x-confirm: last") to delete it anyway, or ` +
          `revoke it instead.`,
        [{ path: '/confirm', message: 'required to delete the last key: "last"' }],
      );
    }
    state.keys = state.keys.filter((k) => k.id !== id);
    return state.keys.length === 0
      ? {
          deleted: true,
          remaining: 0,
          warning: 'That was the last API key: the API is now open, every client is let in without a key.',
        }
      : { deleted: true, remaining: state.keys.length };
  });

  app.get('/api/upstream', async () =>
    state.upstreamReachable
      ? {
          reachable: true,
          url: 'http://127.0.0.1:8080',
          version: { version: '170', commit: 'a1b2c3d4e5f6', build_date: '2026-11-02' },
          error: null,
        }
      : { reachable: false, url: 'http://127.0.0.1:8080', version: null, error: 'connect ECONNREFUSED 127.0.0.1:8080' },
  );

  const upstreamInfo = () =>
    state.upstreamReachable
      ? {
          reachable: true,
          url: 'http://127.0.0.1:8080',
          version: { version: '170', commit: 'a1b2c3d4e5f6', build_date: '2026-11-02' },
          error: null,
        }
      : { reachable: false, url: 'http://127.0.0.1:8080', version: null, error: 'connect ECONNREFUSED 127.0.0.1:8080' };
  const modelList = () =>
    state.upstreamReachable
      ? { reachable: true, error: null, models: state.models }
      : { reachable: false, error: 'connect ECONNREFUSED 127.0.0.1:8080', models: [] };

  app.get('/api/models', async () => modelList());

  const setState = (id: string, next: FakeModel['state']) => {
    for (const model of state.models) if (model.id === id || model.aliases.includes(id)) model.state = next;
  };

  app.post('/api/models/:id/load', async (request, reply) => {
    const id = (request.params as { id: string }).id;
    if (!state.models.some((m) => m.id === id)) return fail(reply, 404, 'not_found', `No model ${id}.`);
    setState(id, 'starting');
    setTimeout(() => setState(id, 'ready'), state.loadMs);
    return reply.code(202).send({ state: 'starting' });
  });

  app.post('/api/models/:id/unload', async (request) => {
    setState((request.params as { id: string }).id, 'stopped');
    return { state: 'stopped' };
  });

  app.post('/api/models/unload-all', async () => {
    for (const model of state.models) if (model.kind !== 'peer') model.state = 'stopped';
    return {};
  });

  registerFakeUsageApi(app, state);

  const sse = (res: ServerResponse, event: string, data: string) => res.write(`event: ${event}\ndata: ${data}\n\n`);

  // /api/live: tests change the state in place, so each stream sends what changed as it sees it.
  const liveStreams = new Set<ServerResponse>();
  const liveLog = (res: ServerResponse, event: string, data: unknown) => sse(res, event, JSON.stringify(data));
  app.get('/api/live', (_request, reply) => {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.flushHeaders();
    const upstream = () => ({
      ...upstreamInfo(),
      state: state.upstreamReachable ? 'live' : 'unavailable',
      mode: 'events',
    });
    let last = { upstream: JSON.stringify(upstream()), models: JSON.stringify(modelList()) };
    sse(res, 'upstream', last.upstream);
    sse(res, 'models', last.models);
    liveLog(res, 'queue', { scope: 'replica', inflight: [], waiting: [] });
    for (const source of ['proxy', 'upstream', 'gateway'])
      liveLog(res, 'history', { source, text: state.logs[source] ?? '' });
    const timer = setInterval(() => {
      const now = { upstream: JSON.stringify(upstream()), models: JSON.stringify(modelList()) };
      if (now.upstream !== last.upstream) sse(res, 'upstream', now.upstream);
      if (now.models !== last.models) sse(res, 'models', now.models);
      last = now;
    }, 100);
    liveStreams.add(res);
    res.on('close', () => {
      clearInterval(timer);
      liveStreams.delete(res);
    });
  });

  app.get('/api/logs/stream', (request, reply) => {
    const query = request.query as { source?: string; history?: string };
    const source = query.source ?? 'proxy';
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    // Headers must leave at once: EventSource reports "open" only when they arrive.
    res.flushHeaders();
    if (query.history !== '0') sse(res, 'history', JSON.stringify(state.logs[source] ?? ''));
    let set = streams.get(source);
    if (!set) streams.set(source, (set = new Set()));
    set.add(res);
    res.on('close', () => set?.delete(res));
  });

  return {
    state,
    requests,
    emitLog(source, text) {
      state.logs[source] = (state.logs[source] ?? '') + text;
      for (const res of streams.get(source) ?? []) sse(res, 'log', JSON.stringify(text));
      for (const res of liveStreams) liveLog(res, 'log', { source, text });
    },
    emitGap(source) {
      for (const res of streams.get(source) ?? [])
        sse(res, 'gap', JSON.stringify({ reason: 'upstream log stream closed' }));
      for (const res of liveStreams)
        liveLog(res, 'gap', { source, kind: 'restart', reason: 'upstream log stream closed' });
    },
    dropStreams() {
      for (const set of streams.values()) for (const res of set) res.destroy();
      for (const res of liveStreams) res.destroy();
    },
    endSessions() {
      sessions.clear();
      for (const res of liveStreams) res.end();
    },
  };
}
