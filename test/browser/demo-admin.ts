/**
 * The made-up household the dashboard page tests show: a llama-swap config for the simulator
 * (models with aliases, one unlisted, one on a peer), five API keys in every state, and a proxy
 * log with colours. Written into the real gateway's store and the simulator, never imitated.
 */
import { AdminAccount } from '../../src/auth/admin-account.js';
import { newKeyRecord, type NewKeyInput } from '../../src/auth/api-keys.js';
import type { Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';

/** Every model runs beside the others (one group without swapping), so a load never stops another. */
export const DEMO_HOUSE_CONFIG: Readonly<Record<string, unknown>> = Object.freeze({
  includeAliasesInList: true,
  models: {
    'qwen3-30b-a3b': {
      name: 'Qwen3 30B A3B',
      description: 'General chat and tools, Q4_K_M, 32k context',
      cmd: 'llama-server --port ${PORT} -m /models/qwen3-30b-a3b-q4_k_m.gguf',
      aliases: ['qwen', 'gpt-4o-mini'],
      ttl: 600,
    },
    'gemma-3-12b': {
      name: 'Gemma 3 12B',
      description: 'Vision, Q5_K_M',
      cmd: 'llama-server --port ${PORT} -m /models/gemma-3-12b-q5_k_m.gguf',
      ttl: 300,
    },
    'nomic-embed-text': {
      description: 'Embeddings',
      cmd: 'llama-server --port ${PORT} -m /models/nomic-embed-text.gguf --embeddings',
      aliases: ['embed'],
    },
    'whisper-large-v3': {
      name: 'Whisper large v3',
      description: 'Speech to text',
      cmd: 'whisper-server --port ${PORT}',
      unlisted: true,
      ttl: 120,
    },
  },
  groups: {
    household: {
      swap: false,
      exclusive: true,
      members: ['qwen3-30b-a3b', 'gemma-3-12b', 'nomic-embed-text', 'whisper-large-v3'],
    },
  },
  peers: { workstation: { proxy: 'http://192.0.2.10:8080', models: ['llama-3.3-70b'] } },
});

/** The models loaded when a test starts. */
export const DEMO_LOADED = ['qwen3-30b-a3b', 'gemma-3-12b'] as const;

const ESC = '\u001b[';
/** llama-swap's own lines, with the ANSI colours the Logs page turns into classes. */
const DEMO_PROXY_LOG: readonly string[] = [
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

/** Writes the demo log into a simulator whose proxy log is still empty. */
export function writeDemoLog(sim: Simulator): void {
  for (const line of DEMO_PROXY_LOG) sim.log('proxy', line);
}

const DAY = 86_400_000;

/** The demo keys by name, as the tests refer to them. */
export type DemoKeyName = 'open-webui' | 'home-assistant' | 'laptop (Claude Code)' | 'old-script' | 'trial';
export type DemoKeyIds = Readonly<Record<DemoKeyName, string>>;

interface DemoKey extends NewKeyInput {
  name: DemoKeyName;
  createdAgo: number;
  lastUsedAgo: number | null;
  revokedAgo?: number;
}

function demoKeys(now: number): DemoKey[] {
  return [
    {
      name: 'open-webui',
      createdAgo: 40 * DAY,
      lastUsedAgo: 3 * 60_000,
      note: 'Family chat on the NAS',
      limits: { rpm: 120, tpm: 200_000, concurrent: 4 },
    },
    {
      name: 'home-assistant',
      createdAgo: 12 * DAY,
      lastUsedAgo: 5 * 3_600_000,
      expiresAt: now + 80 * DAY,
      models: ['qwen', 'whisper-large-v3'],
    },
    {
      name: 'laptop (Claude Code)',
      createdAgo: 2 * DAY,
      lastUsedAgo: null,
      expiresAt: now + 28 * DAY,
      models: ['qwen3-30b-a3b', 'gemma-3-12b', 'nomic-embed-text', 'embed'],
      note: 'Work laptop',
      limits: { rpm: 30 },
    },
    {
      name: 'old-script',
      createdAgo: 90 * DAY,
      lastUsedAgo: 31 * DAY,
      revokedAgo: 30 * DAY,
      note: 'Leaked in a gist',
    },
    { name: 'trial', createdAgo: 60 * DAY, lastUsedAgo: 45 * DAY, expiresAt: now - 30 * DAY, models: ['gemma-3-12b'] },
  ];
}

/**
 * Replaces every key in the gateway's store with the demo keys (`only`: just those), under the
 * `ids` of an earlier seeding when given (recorded usage keeps pointing at them), and reloads
 * the key index as the admin API does after its own writes.
 */
export async function seedDemoKeys(
  gateway: TestGateway,
  options: { ids?: DemoKeyIds; only?: readonly DemoKeyName[] } = {},
): Promise<DemoKeyIds> {
  const store = gateway.store!;
  for (const key of await store.keys.list()) await store.keys.delete(key.id);
  const now = Date.now();
  const ids: Partial<Record<DemoKeyName, string>> = { ...options.ids };
  for (const { createdAgo, lastUsedAgo, revokedAgo, ...input } of demoKeys(now)) {
    if (options.only && !options.only.includes(input.name)) continue;
    const { record } = newKeyRecord(input, now - createdAgo);
    const id = (ids[input.name] ??= record.id);
    await store.keys.create({
      ...record,
      id,
      lastUsedAt: lastUsedAgo === null ? null : now - lastUsedAgo,
      revokedAt: revokedAgo === undefined ? null : now - revokedAgo,
    });
  }
  await gateway.index!.reload();
  return ids as DemoKeyIds;
}

/**
 * Gives the first admin `password` (made on first use, as the setup link would), drops the
 * setup token, and ends every dashboard session. Through the store, not GATEHOUSE_ADMIN_PASSWORD:
 * a password from the settings cannot be changed on the Settings page.
 */
export async function resetAdmin(gateway: TestGateway, password: string): Promise<void> {
  const store = gateway.store!;
  const account = new AdminAccount(store, { scryptCost: gateway.settings.passwordHashCost });
  await account.applyPassword(password);
  await account.clearSetupToken();
  await store.sessions.deleteAllExcept(null);
}
