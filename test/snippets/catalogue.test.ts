/**
 * The catalogue as a whole: every snippet is tested, metadata is well-formed, base URLs are the
 * right kind, and the key shows up exactly where it belongs — or, for a key chosen by prefix,
 * never.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  anthropicBaseUrl,
  containerOrigin,
  EMBEDDING_MODEL_PLACEHOLDER,
  getSnippet,
  keyPlaceholder,
  NO_KEY_PLACEHOLDER,
  normalizeOrigin,
  ollamaBaseUrl,
  ollamaOrigin,
  openaiBaseUrl,
  renderSnippet,
  SNIPPETS,
  snippetNote,
  type SnippetContext,
  type SnippetId,
} from '../../src/snippets/index.js';
import { CHECKS, OLLAMA_ORIGIN, ORIGIN } from './expectations.js';

/** Shaped like a real key: `sk-` + 43 base62 characters. */
const SECRET = 'sk-7Qm2Xb9LpV4nT8cK1wZ6yR3hJ5sD0fG2aE4uI6oPq9B';
const PREFIX = SECRET.slice(0, 9);
/** Every model fact known, so the only notes are about the key. */
const ctx = (key: SnippetContext['key'], extra: Partial<SnippetContext> = {}): SnippetContext => ({
  origin: ORIGIN,
  model: 'qwen3-8b',
  embeddingModel: 'nomic-embed',
  contextLength: 32768,
  key,
  ...extra,
});
const squash = (line: string) => line.trim().replace(/\s+/g, ' ');
const linesWith = (text: string, needle: string) =>
  text
    .split('\n')
    .filter((l) => l.includes(needle))
    .map(squash);
const occurrences = (text: string, needle: string) => text.split(needle).length - 1;
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('the snippet catalogue', () => {
  it('has a test entry for every snippet, and none for snippets that do not exist', () => {
    expect(Object.keys(CHECKS).sort()).toEqual(SNIPPETS.map((s) => s.id).sort());
  });

  it('runs every snippet in the way its language allows', () => {
    const allowed: Record<string, string[]> = {
      bash: ['curl', 'shell'],
      python: ['python'],
      typescript: ['node'],
      json: ['config'],
      yaml: ['config'],
      toml: ['config'],
      text: ['fields', 'config'],
    };
    for (const s of SNIPPETS) expect(allowed[s.language], s.id).toContain(CHECKS[s.id].kind);
    for (const s of SNIPPETS.filter((x) => x.group === 'curl')) expect(CHECKS[s.id].kind, s.id).toBe('curl');
  });

  it('has unique kebab-case ids and covers every group the page shows', () => {
    const ids = SNIPPETS.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
    expect(new Set(SNIPPETS.map((s) => s.group))).toEqual(
      new Set(['curl', 'python', 'typescript', 'home-automation', 'coding-agents', 'editors', 'chat-uis', 'ollama']),
    );
  });

  it.each(SNIPPETS.map((s) => [s.id, s] as const))(
    '%s has a title, a one-line "where" and one-line pitfalls',
    (_id, s) => {
      expect(s.title).toMatch(/\S/);
      expect(s.client).toMatch(/\S/);
      expect(s.where).toMatch(/\S/);
      expect(s.where).not.toContain('\n');
      expect(s.pitfalls.length).toBeGreaterThan(0);
      for (const p of s.pitfalls) expect(p).toMatch(/^[^\n]+$/);
      for (const need of s.needs ?? []) expect(['models-list', 'responses', 'embeddings']).toContain(need);
    },
  );

  it('flags the snippets that need more than chat completions', () => {
    const needing = (need: string) => SNIPPETS.filter((s) => s.needs?.includes(need as never)).map((s) => s.id);
    expect(needing('responses')).toEqual(['codex-config', 'codex-shell']);
    expect(needing('embeddings')).toEqual(['curl-embeddings']);
    expect(needing('models-list')).toEqual(
      expect.arrayContaining([
        'curl-models',
        'home-assistant-local-openai',
        'home-assistant-extended-openai',
        'open-webui-docker',
        'open-webui-admin',
        'librechat-yaml',
      ]),
    );
  });

  it('renders through renderSnippet and snippetNote exactly as through the snippet itself', () => {
    for (const s of SNIPPETS) {
      const c = ctx({ kind: 'prefix', prefix: PREFIX });
      expect(renderSnippet(s.id, c)).toBe(s.render(c));
      expect(snippetNote(s.id, c)).toBe(s.note(c));
      expect(getSnippet(s.id)).toBe(s);
    }
    expect(() => renderSnippet('no-such-snippet' as SnippetId, ctx({ kind: 'none' }))).toThrow(/unknown snippet/);
  });
});

/** Companion snippets that only set the key; their config-file partner carries the URL. */
const KEY_ONLY = new Set<SnippetId>(['codex-shell', 'zed-key', 'librechat-env']);

describe('base URLs', () => {
  it('gives the OpenAI base URL with /v1 and the Anthropic one without, whatever form the origin is pasted in', () => {
    for (const origin of [
      'http://192.168.1.5:3000',
      'http://192.168.1.5:3000/',
      'http://192.168.1.5:3000/v1',
      'http://192.168.1.5:3000/v1/',
      ' http://192.168.1.5:3000// ',
    ]) {
      expect(openaiBaseUrl(origin)).toBe('http://192.168.1.5:3000/v1');
      expect(anthropicBaseUrl(origin)).toBe('http://192.168.1.5:3000');
      expect(normalizeOrigin(origin)).toBe('http://192.168.1.5:3000');
    }
  });

  it("puts the Ollama door on the gateway's host at its own port, plain HTTP, without a path prefix", () => {
    expect(ollamaOrigin('https://llm.example.com:8443/gatehouse/')).toBe('http://llm.example.com:11434');
    expect(ollamaOrigin('http://192.168.1.5:3000', 11500)).toBe('http://192.168.1.5:11500');
    expect(ollamaOrigin('http://[::1]:3000')).toBe('http://[::1]:11434');
    expect(ollamaBaseUrl({ origin: ORIGIN, model: 'm', key: { kind: 'none' } })).toBe(OLLAMA_ORIGIN);
    expect(ollamaBaseUrl({ origin: ORIGIN, model: 'm', key: { kind: 'none' }, ollamaOrigin: 'http://h:1' })).toBe(
      'http://h:1',
    );
  });

  it('sends containers to host.docker.internal for a loopback origin and leaves a LAN origin alone', () => {
    expect(containerOrigin('http://localhost:3000')).toEqual({
      origin: 'http://host.docker.internal:3000',
      viaHostGateway: true,
    });
    expect(containerOrigin('http://127.0.0.1:3000/')).toEqual({
      origin: 'http://host.docker.internal:3000',
      viaHostGateway: true,
    });
    expect(containerOrigin('http://192.168.1.5:3000')).toEqual({
      origin: 'http://192.168.1.5:3000',
      viaHostGateway: false,
    });
    expect(containerOrigin('http://localhost:3000/llm/')).toEqual({
      origin: 'http://host.docker.internal:3000/llm',
      viaHostGateway: true,
    });
  });

  it.each(SNIPPETS.map((s) => [s.id, s] as const))('%s uses the base URL of its kind', (_id, s) => {
    const text = s.render(ctx({ kind: 'secret', value: SECRET }));
    const origin = s.baseUrlKind === 'ollama' ? OLLAMA_ORIGIN : ORIGIN;
    if (s.baseUrlKind === 'ollama') expect(text, s.id).not.toContain(ORIGIN);
    const after = [...text.matchAll(new RegExp(`${escapeRegExp(origin)}(\\S{0,12})`, 'g'))].map((m) => m[1]!);
    if (KEY_ONLY.has(s.id)) expect(after).toEqual([]);
    else expect(after.length, `${s.id} shows no URL`).toBeGreaterThan(0);
    expect(text).not.toContain('/v1/v1');
    for (const tail of after) {
      if (s.baseUrlKind === 'openai') expect(tail, s.id).toMatch(/^\/v1(?:[/"'\s\\]|$)/);
      else if (s.baseUrlKind === 'ollama') expect(tail, s.id).toMatch(/^(?:["'\s\\,]|$)/);
      else expect(tail, s.id).toMatch(/^(?:\/v1\/messages|["'\s\\]|$)/);
    }
  });
});

describe('where the key goes', () => {
  const secretCtx = ctx({ kind: 'secret', value: SECRET });
  const cases = SNIPPETS.map((s) => [s.id, s, CHECKS[s.id].keyLines] as const);

  it.each(cases)('%s carries a real key exactly on its key lines', (_id, s, keyLines) => {
    const text = s.render(secretCtx);
    expect(linesWith(text, SECRET)).toEqual(keyLines(SECRET).map(squash));
    expect(occurrences(text, SECRET)).toBe(keyLines(SECRET).length);
    expect(s.note(secretCtx)).toBeUndefined();
  });

  it.each(cases)(
    '%s never shows the secret for a key chosen by prefix, only a marked placeholder in its place',
    (_id, s, keyLines) => {
      const c = ctx({ kind: 'prefix', prefix: PREFIX });
      const text = s.render(c);
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(SECRET.slice(PREFIX.length));
      expect(keyPlaceholder(PREFIX)).toBe(`${PREFIX}...PASTE-YOUR-KEY`);
      expect(text).toBe(s.render(secretCtx).replaceAll(SECRET, keyPlaceholder(PREFIX)));
      const note = s.note(c);
      if (keyLines('x').length === 0) {
        expect(note).toBeUndefined();
      } else {
        expect(note).toContain(keyPlaceholder(PREFIX));
        expect(note).toContain(`starts ${PREFIX}`);
        expect(note).not.toContain(SECRET);
      }
    },
  );

  it.each(cases)(
    '%s in open mode: a labelled placeholder if the client insists on a key, otherwise no key at all',
    (_id, s, keyLines) => {
      const c = ctx({ kind: 'none' });
      const text = s.render(c);
      const note = s.note(c);
      if (s.keyRequired || keyLines('x').length === 0) {
        expect(text).toBe(s.render(secretCtx).replaceAll(SECRET, NO_KEY_PLACEHOLDER));
        if (keyLines('x').length === 0) expect(note).toBeUndefined();
        else expect(note).toMatch(new RegExp(`^Open mode: .*${NO_KEY_PLACEHOLDER}`));
      } else {
        expect(text).not.toMatch(/sk-|PASTE/);
        const keyLine = new RegExp(
          `^${keyLines('@@KEY@@')
            .map((l) => escapeRegExp(squash(l)).replace('@@KEY@@', '\\S+'))
            .join('|')}$`,
        );
        for (const line of text.split('\n')) expect(squash(line), s.id).not.toMatch(keyLine);
        expect(note).toMatch(/^Open mode: no key exists yet, so none is needed/);
      }
    },
  );

  it('marks a missing embedding model as a placeholder, and says so in the note', () => {
    const c = ctx({ kind: 'secret', value: SECRET }, { embeddingModel: undefined });
    expect(renderSnippet('curl-embeddings', c)).toContain(`"model": "${EMBEDDING_MODEL_PLACEHOLDER}"`);
    expect(snippetNote('curl-embeddings', c)).toBe(
      `Replace ${EMBEDDING_MODEL_PLACEHOLDER} with an embedding model id from /v1/models.`,
    );
  });

  it('leaves the auth header out of every curl snippet in open mode', () => {
    for (const s of SNIPPETS.filter((x) => CHECKS[x.id].kind === 'curl')) {
      expect(s.render(ctx({ kind: 'none' })), s.id).not.toMatch(/authorization|x-api-key/i);
    }
  });
});

describe('the module is browser-safe', () => {
  it('imports nothing but its own files (no node: built-ins, no packages)', () => {
    const dir = new URL('../../src/snippets/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const source = readFileSync(new URL(file, dir), 'utf8');
      const specifiers = [...source.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map(
        (m) => m[1]!,
      );
      for (const spec of specifiers) expect(spec, `${file} imports ${spec}`).toMatch(/^\.\/[a-z-]+\.js$/);
    }
  });
});
