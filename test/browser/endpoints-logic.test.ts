/**
 * The Endpoints page's pure logic: which models it fills in first, how the embedding picker is
 * ordered, what the snippets are rendered with, and the hint for a pasted key.
 */
import { describe, expect, it } from 'vitest';
import type { Model, ModelCapabilities } from '../../src/admin-api/types.js';
import { generateApiKey } from '../../src/auth/api-keys.js';
import {
  MODEL_PLACEHOLDER,
  embeddingOptions,
  groupSnippets,
  modelOptions,
  pageSnippets,
  pastedKeyHint,
  snippetContext,
} from '../../web/src/lib/endpoints.js';
import { defaultModels, modelUse } from '../../web/src/lib/model-defaults.js';

const caps = (c: Partial<ModelCapabilities>): ModelCapabilities => ({
  input: [],
  output: [],
  tools: false,
  reranker: false,
  ...c,
});

function model(id: string, extra: Partial<Model> = {}): Model {
  return {
    id,
    name: null,
    description: null,
    kind: 'model',
    aliases: [],
    peerId: null,
    unlisted: false,
    state: 'stopped',
    ttl: null,
    capabilities: null,
    contextLength: null,
    ...extra,
  };
}

const defaultsOf = (models: Model[], allowed: string[] | null = null) =>
  defaultModels(models, modelOptions(models, allowed));

describe('what a model is for', () => {
  it('follows the declared capabilities first: text in and out is chat, a reranker flag is a reranker', () => {
    expect(modelUse(model('m', { capabilities: caps({ input: ['text', 'image'], output: ['text'] }) }))).toBe('chat');
    expect(modelUse(model('m', { capabilities: caps({ tools: true }) }))).toBe('chat');
    expect(modelUse(model('m', { capabilities: caps({ reranker: true }) }))).toBe('reranker');
    // A declared chat model is chat whatever its name says.
    expect(modelUse(model('embed-chat', { capabilities: caps({ input: ['text'], output: ['text'] }) }))).toBe('chat');
  });

  it('calls speech, image and transcription models neither chat nor embedding', () => {
    for (const c of [
      { input: ['text'], output: ['audio'] },
      { input: ['text'], output: ['image'] },
      { input: ['audio'], output: ['text'] },
    ])
      expect(modelUse(model('m', { capabilities: caps(c) })), JSON.stringify(c)).toBe('other');
  });

  it('falls back to the id, name and aliases when nothing is declared', () => {
    expect(modelUse(model('nomic-embed'))).toBe('embedding');
    expect(modelUse(model('bge-m3', { name: 'BGE M3 Embedding' }))).toBe('embedding');
    expect(modelUse(model('bge-m3', { aliases: ['text-embedding-3-small'] }))).toBe('embedding');
    expect(modelUse(model('bge-reranker-v2-m3'))).toBe('reranker');
    expect(modelUse(model('qwen3-8b'))).toBe('chat');
    // Only a context size declared says nothing about the use.
    expect(modelUse(model('nomic-embed', { contextLength: 8192 }))).toBe('embedding');
  });
});

describe('the default models', () => {
  const chat = model('llama-3.2-3b');
  const qwen = model('qwen3-8b', { capabilities: caps({ input: ['text'], output: ['text'], tools: true }) });
  const embed = model('nomic-embed');
  const rerank = model('bge-reranker', { capabilities: caps({ reranker: true }) });

  it('with only an embedding model loaded: a chat model for chat, the loaded embedding model for embeddings', () => {
    const loaded = { ...embed, state: 'ready' as const };
    expect(defaultsOf([chat, loaded, qwen, rerank])).toEqual({ chat: 'llama-3.2-3b', embedding: 'nomic-embed' });
  });

  it('prefers a loaded chat model over the first configured one', () => {
    expect(defaultsOf([chat, embed, { ...qwen, state: 'ready' }]).chat).toBe('qwen3-8b');
    expect(defaultsOf([chat, embed, { ...qwen, state: 'starting' }]).chat).toBe('qwen3-8b');
    expect(defaultsOf([chat, embed, qwen]).chat).toBe('llama-3.2-3b');
  });

  it('prefers a loaded embedding model over the first configured one', () => {
    const e5 = model('e5-embed');
    expect(defaultsOf([e5, { ...embed, state: 'ready' }]).embedding).toBe('nomic-embed');
    expect(defaultsOf([e5, embed]).embedding).toBe('e5-embed');
  });

  it('never picks an embedding or reranker model for chat, nor a chat model for embeddings: null instead', () => {
    expect(defaultsOf([{ ...embed, state: 'ready' }, rerank])).toEqual({ chat: null, embedding: 'nomic-embed' });
    expect(defaultsOf([chat, rerank])).toEqual({ chat: 'llama-3.2-3b', embedding: null });
    expect(defaultsOf([])).toEqual({ chat: null, embedding: null });
  });

  it('picks among what the key may use, aliases and unlisted ids included, models before aliases', () => {
    const alias = model('gpt-4o-mini', { kind: 'alias' });
    expect(defaultsOf([chat, embed, alias], ['gpt-4o-mini', 'nomic-embed'])).toEqual({
      chat: 'gpt-4o-mini',
      embedding: 'nomic-embed',
    });
    expect(defaultsOf([alias, chat]).chat).toBe('llama-3.2-3b');
    // Ids llama-swap does not list are judged by the id alone.
    expect(defaultsOf([chat], ['secret-embedder', 'secret-chat'])).toEqual({
      chat: 'secret-chat',
      embedding: 'secret-embedder',
    });
  });

  it('skips peers, which live on other machines', () => {
    expect(defaultsOf([model('gpu-box/llama-3.3-70b', { kind: 'peer' })]).chat).toBeNull();
  });
});

describe('the embedding picker', () => {
  it('lists embedding models first, then the rest in their order', () => {
    const models = [model('a-chat'), model('b-embed'), model('c-chat'), model('d-embedding')];
    expect(embeddingOptions(models, modelOptions(models, null)).map((o) => o.id)).toEqual([
      'b-embed',
      'd-embedding',
      'a-chat',
      'c-chat',
    ]);
  });
});

describe('what the snippets are rendered with', () => {
  const models = [model('qwen3-8b', { contextLength: 32768 }), model('llama-3.2-3b')];
  const key = { kind: 'none' } as const;

  it("carries the chat model's declared context window, and none when it declares none", () => {
    const choices = { origin: 'http://h:3000', model: 'qwen3-8b', embeddingModel: 'nomic-embed', key };
    expect(snippetContext(choices, models)).toEqual({ ...choices, contextLength: 32768 });
    expect(snippetContext({ ...choices, model: 'llama-3.2-3b' }, models)).not.toHaveProperty('contextLength');
  });

  it('puts placeholders in for empty choices', () => {
    expect(snippetContext({ origin: 'http://h:3000', model: ' ', embeddingModel: '', key }, models)).toEqual({
      origin: 'http://h:3000',
      model: MODEL_PLACEHOLDER,
      embeddingModel: undefined,
      key,
    });
  });

  it("gives the Ollama snippets the door's address: the clients' host at the door's port", () => {
    const ctx = snippetContext(
      { origin: 'https://llm.example.com/gatehouse', ollamaPort: 11434, model: 'qwen3-8b', embeddingModel: '', key },
      models,
    );
    expect(ctx.ollamaOrigin).toBe('http://llm.example.com:11434');
  });
});

describe('the snippets the page offers', () => {
  it('has the Ollama group only while the Ollama door is on, its clients told apart by name', () => {
    const off = groupSnippets(pageSnippets({ ollama: null }));
    expect(off.map((g) => g.group)).not.toContain('ollama');
    const on = groupSnippets(pageSnippets({ ollama: { port: 11434, keyless: false } }));
    const ollama = on.find((g) => g.group === 'ollama');
    expect(ollama?.label).toBe('Ollama');
    expect(ollama?.clients.map((c) => c.label)).toEqual([
      'Home Assistant',
      'Open WebUI',
      'GitHub Copilot (VS Code)',
      'ollama (npm)',
      'ollama (Python)',
    ]);
  });
});

describe('the hint for a pasted key', () => {
  it('stays quiet for keys Gatehouse makes, and for nothing pasted', () => {
    for (let i = 0; i < 50; i++) expect(pastedKeyHint(generateApiKey().secret)).toBeNull();
    expect(pastedKeyHint(`  ${generateApiKey().secret}\n`)).toBeNull();
    expect(pastedKeyHint('')).toBeNull();
    expect(pastedKeyHint('   ')).toBeNull();
  });

  it('says keys start with sk- when the text does not', () => {
    expect(pastedKeyHint('gh_1234567890')).toBe('This does not look like a Gatehouse key: those start with sk-.');
    expect(pastedKeyHint('Bearer sk-abc')).toBe('This does not look like a Gatehouse key: those start with sk-.');
  });

  it('counts the characters after sk- when the key looks cut short or padded', () => {
    const secret = generateApiKey().secret;
    expect(pastedKeyHint(secret.slice(0, 20))).toBe(
      'This does not look like a whole Gatehouse key: those are sk- and 43 letters and digits ' +
        '(this has 17 characters after sk-).',
    );
    expect(pastedKeyHint(`${secret}x`)).toContain('(this has 44 characters after sk-)');
    expect(pastedKeyHint('sk-proj-abc')).toContain('(this has 8 characters after sk-)');
  });
});
