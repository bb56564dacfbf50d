/**
 * The Endpoints page's logic: which address clients use, how snippets are grouped into tabs,
 * what a key choice means for the snippets, and which models a key may use. The snippets
 * themselves come from the one typed module in src/snippets (browser-safe), never copied.
 */
import {
  SNIPPETS,
  containerOrigin,
  normalizeOrigin,
  ollamaOrigin,
  type Snippet,
  type SnippetGroup,
  type SnippetContext,
  type SnippetKey,
} from '@gatehouse/snippets/index.js';
import type { ApiKey, EndpointsInfo, Model } from '@gatehouse/admin-api/types.js';
import { usesOf } from './model-defaults.js';

const GROUP_LABELS: Record<SnippetGroup, string> = {
  curl: 'curl',
  python: 'Python',
  typescript: 'TypeScript',
  'home-automation': 'Home Assistant',
  'coding-agents': 'Coding agents',
  editors: 'Editors',
  'chat-uis': 'Chat UIs',
  ollama: 'Ollama',
};

export interface SnippetClient {
  /** As the module names it ("openai (Python)"); also the name of a key created for it. */
  client: string;
  /** Shorter, for a tab inside its group ("openai"). */
  label: string;
  snippets: Snippet[];
}

export interface SnippetGroupView {
  group: SnippetGroup;
  label: string;
  clients: SnippetClient[];
}

/** The snippets the page offers: the Ollama group only while the Ollama door is on. */
export function pageSnippets(info: Pick<EndpointsInfo, 'ollama'>, snippets: readonly Snippet[] = SNIPPETS): Snippet[] {
  return snippets.filter((s) => s.group !== 'ollama' || info.ollama !== null);
}

/** The module's snippets in its order: groups, then clients inside a group, then snippets. */
export function groupSnippets(snippets: readonly Snippet[] = SNIPPETS): SnippetGroupView[] {
  const groups: SnippetGroupView[] = [];
  for (const snippet of snippets) {
    let group = groups.find((g) => g.group === snippet.group);
    if (!group) {
      group = { group: snippet.group, label: GROUP_LABELS[snippet.group], clients: [] };
      groups.push(group);
    }
    let client = group.clients.find((c) => c.client === snippet.client);
    if (!client) {
      client = { client: snippet.client, label: clientLabel(snippet.client, snippet.group), snippets: [] };
      group.clients.push(client);
    }
    client.snippets.push(snippet);
  }
  return groups;
}

/**
 * "openai (Python)" → "openai", "Local OpenAI LLM (Home Assistant)" → "Local OpenAI LLM": the group already says
 * it.
 */
function clientLabel(client: string, group: SnippetGroup): string {
  // The Ollama group has both ollama clients (npm and Python): there only "(Ollama)" goes.
  if (group === 'ollama') return client.replace(/\s+\(Ollama\)$/, '');
  return client.replace(/\s+\((Python|npm|Home Assistant)\)$/, '');
}

const MAX_KEY_NAME = 100;

/**
 * The name of a key created for a client: the client's name (the natural one), with `-2`,
 * `-3`... when a key already has it, so one-click keys stay apart in the list. Key names are at
 * most 100 characters (the keys API).
 */
export function keyNameFor(client: string, takenNames: Iterable<string> = []): string {
  const base = client.trim().slice(0, MAX_KEY_NAME) || 'Client';
  const taken = new Set(takenNames);
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const name = `${base.slice(0, MAX_KEY_NAME - suffix.length)}${suffix}`;
    if (!taken.has(name)) return name;
  }
}

/**
 * The address clients use: `GATEHOUSE_PUBLIC_URL` when set, else the origin the browser used
 * to open the dashboard (same port as /v1: the gateway serves both).
 */
export function clientOrigin(
  publicUrl: string | null,
  browserOrigin: string,
): { origin: string; fromSetting: boolean } {
  return publicUrl
    ? { origin: normalizeOrigin(publicUrl), fromSetting: true }
    : { origin: normalizeOrigin(browserOrigin), fromSetting: false };
}

/** True for localhost addresses, which only work for clients on the gateway's own machine. */
export function isLoopbackOrigin(origin: string): boolean {
  try {
    // The module's own test of "loopback" (a container would need host.docker.internal).
    return containerOrigin(origin).viaHostGateway;
  } catch {
    return false;
  }
}

/**
 * What the operator chose for the key the snippets carry:
 * - `create`: a key made here for the current client (its secret lives in page memory only);
 * - `paste`: a secret typed or pasted here (page memory only);
 * - `existing`: a key picked from the list: only its prefix is known;
 * - `none`: open mode, no key.
 */
export type KeyMode = 'create' | 'paste' | 'existing' | 'none';

/** Shown for a key that is not known yet (create not clicked, nothing pasted). */
const UNKNOWN_KEY_PREFIX = 'sk-';

export interface KeyChoice {
  mode: KeyMode;
  created: { secret: string; key: ApiKey } | null;
  pasted: string;
  existing: ApiKey | null;
}

export function snippetKey(choice: KeyChoice): SnippetKey {
  switch (choice.mode) {
    case 'create':
      return choice.created
        ? { kind: 'secret', value: choice.created.secret }
        : { kind: 'prefix', prefix: UNKNOWN_KEY_PREFIX };
    case 'paste': {
      const value = choice.pasted.trim();
      return value === '' ? { kind: 'prefix', prefix: UNKNOWN_KEY_PREFIX } : { kind: 'secret', value };
    }
    case 'existing':
      return { kind: 'prefix', prefix: choice.existing?.prefix ?? UNKNOWN_KEY_PREFIX };
    case 'none':
      return { kind: 'none' };
  }
}

/** How Gatehouse makes keys (src/auth/api-keys.ts): `sk-` + 43 base62 characters. A test keeps the two in step. */
const GATEHOUSE_KEY = /^sk-[0-9A-Za-z]{43}$/;

/**
 * A gentle word when pasted text does not look like a Gatehouse key (a half-copied key, another
 * service's key); null when it does, or when nothing is pasted. The snippets use the text anyway.
 */
export function pastedKeyHint(pasted: string): string | null {
  const value = pasted.trim();
  if (value === '' || GATEHOUSE_KEY.test(value)) return null;
  if (!value.startsWith('sk-')) return 'This does not look like a Gatehouse key: those start with sk-.';
  return (
    'This does not look like a whole Gatehouse key: those are sk- and 43 letters and digits ' +
    `(this has ${value.length - 3} characters after sk-).`
  );
}

/** The models a key may use: all when it is not restricted (or unknown: created or pasted). */
export function allowedModelIds(choice: KeyChoice): readonly string[] | null {
  const key =
    choice.mode === 'existing' ? choice.existing : choice.mode === 'create' ? (choice.created?.key ?? null) : null;
  return key && key.models.length > 0 ? key.models : null;
}

export interface ModelOption {
  id: string;
  label: string;
  kind: 'model' | 'alias' | 'other';
}

/**
 * The picker's options: llama-swap's local models and aliases (peers live on other machines),
 * only those the key may use; ids the key allows that llama-swap does not list are kept, marked.
 */
export function modelOptions(models: readonly Model[], allowed: readonly string[] | null): ModelOption[] {
  const local = models.filter((m) => m.kind === 'model' || m.kind === 'alias');
  const usable = allowed ? local.filter((m) => allowed.includes(m.id)) : local;
  const options: ModelOption[] = usable.map((m) => ({
    id: m.id,
    label: m.name && m.name !== m.id ? `${m.id} — ${m.name}` : m.id,
    kind: m.kind === 'alias' ? 'alias' : 'model',
  }));
  for (const id of allowed ?? []) {
    if (!options.some((o) => o.id === id))
      options.push({ id, label: `${id} (not listed by llama-swap)`, kind: 'other' });
  }
  return options;
}

/** The embedding picker's options: embedding models first, then the rest in their order. */
export function embeddingOptions(models: readonly Model[], options: readonly ModelOption[]): ModelOption[] {
  const useOf = usesOf(models);
  const isEmbedding = (o: ModelOption) => useOf(o.id) === 'embedding';
  return [...options.filter(isEmbedding), ...options.filter((o) => !isEmbedding(o))];
}

export interface SnippetChoices {
  origin: string;
  /** The Ollama door's port (GET /api/endpoints), when it is on. */
  ollamaPort?: number;
  model: string;
  embeddingModel: string;
  key: SnippetKey;
}

/** What the snippets are rendered with: the choices, placeholders for empty ones, the chat model's context. */
export function snippetContext(choices: SnippetChoices, models: readonly Model[]): SnippetContext {
  const model = choices.model.trim();
  const contextLength = models.find((m) => m.id === model)?.contextLength;
  return {
    origin: choices.origin,
    model: model || MODEL_PLACEHOLDER,
    embeddingModel: choices.embeddingModel.trim() || undefined,
    key: choices.key,
    ...(contextLength ? { contextLength } : {}),
    ...(choices.ollamaPort === undefined ? {} : { ollamaOrigin: ollamaOrigin(choices.origin, choices.ollamaPort) }),
  };
}

/** Used when no model can be picked (llama-swap down, no models): the text still reads right. */
export const MODEL_PLACEHOLDER = 'MODEL-ID';
