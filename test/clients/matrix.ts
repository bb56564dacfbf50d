/**
 * The client matrix: real clients (official SDKs, coding-agent CLIs) through a real gateway that
 * requires a key, in front of the llama-swap simulator. Each client × cell is one test; a cell
 * that cannot run here says why on stderr before it is skipped, and the file ends by printing
 * the whole matrix.
 */
import { afterAll, it, type TestContext } from 'vitest';
import type { RequestView } from '../../src/http/admin/usage-handlers.js';
import { completionText, DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { Knobs } from '../fakes/llama-swap/types.js';
import type { TestGateway } from '../helpers/gateway.js';
import { createKey, listRequests, startUsageGateway } from '../usage/usage-helpers.js';
import { openUpstream } from '../../src/management-client/open-upstream.js';

export const CELLS = [
  'chat',
  'streaming',
  'tool round trip',
  'embeddings (float)',
  'embeddings (base64)',
  'errors',
  'cancel',
] as const;
/** The Ollama door's cells (test/clients/ollama-matrix.test.ts): Ollama's API has its own verbs. */
export const OLLAMA_CELLS = [
  'chat',
  'stream',
  'tools',
  'format schema',
  'embed',
  'list',
  'ps',
  'show',
  'bad key',
  'model not allowed',
  'abort',
] as const;
/** A cell of the OpenAI/Anthropic matrices (SDKs, CLIs). */
export type ApiCell = (typeof CELLS)[number];
export type Cell = ApiCell | (typeof OLLAMA_CELLS)[number];

export const CHAT_MODEL = 'qwen3-8b';
/** A model the simulator serves but the matrix's restricted key may not call. */
export const REFUSED_MODEL = 'llama-3.2-3b';
export const EMBEDDING_MODEL = 'nomic-embed';
export const TOKENS = 6;
/** What the simulator answers CHAT_MODEL with (when it does not call a tool). */
export const ANSWER = completionText(CHAT_MODEL, TOKENS);
/** Knobs for cancel cells: a stream that only the client's leaving can end within the test. */
export const SLOW: Partial<Knobs> = { tokens: 400, tokensPerSecond: 20 };

type Skip = (reason: string) => never;
type Register = (name: string, body: (ctx: TestContext) => Promise<void>, timeout?: number) => void;

export class ClientMatrix {
  readonly #results = new Map<string, Map<Cell, string>>();

  /**
   * `register` is vitest's `it` or `it.concurrent`; `cells` orders the summary, which is printed
   * after the file's tests.
   */
  constructor(
    readonly title: string,
    private readonly register: Register = it,
    private readonly cells: readonly Cell[] = CELLS,
  ) {
    afterAll(() => console.info(this.summary()));
  }

  /** One cell as a test; the body calls `skip(reason)` when the cell cannot run here. */
  cell(client: string, cell: Cell, body: (skip: Skip) => Promise<void>, timeoutMs?: number): void {
    this.#set(client, cell, 'not run');
    this.register(
      `${client}: ${cell}`,
      async (ctx) => {
        const skip: Skip = (reason) => {
          this.#set(client, cell, `skipped: ${reason}`);
          console.warn(`[${this.title}] ${client} × ${cell} SKIPPED: ${reason}`);
          return ctx.skip(reason);
        };
        try {
          await body(skip);
          this.#set(client, cell, 'pass');
        } catch (error) {
          if (!this.#results.get(client)!.get(cell)!.startsWith('skipped')) this.#set(client, cell, 'FAIL');
          throw error;
        }
      },
      timeoutMs,
    );
  }

  /** A cell that does not apply to this client, listed as skipped with the reason. */
  notApplicable(client: string, cell: Cell, reason: string): void {
    this.cell(client, cell, (skip) => skip(reason));
  }

  summary(): string {
    const rows = [...this.#results].flatMap(([client, cells]) =>
      this.cells.filter((c) => cells.has(c)).map((c) => `  ${client.padEnd(22)} ${c.padEnd(20)} ${cells.get(c)!}`),
    );
    return [`${this.title} (client × cell → result)`, ...rows].join('\n');
  }

  #set(client: string, cell: Cell, result: string): void {
    let cells = this.#results.get(client);
    if (!cells) this.#results.set(client, (cells = new Map()));
    cells.set(cell, result);
  }
}

/** A simulator and a gateway that requires a key, with a key for everything and one for CHAT_MODEL only. */
export interface Stack {
  sim: Simulator;
  gateway: TestGateway;
  key: { id: string; secret: string };
  restrictedKey: { id: string; secret: string };
  /** The Ollama door's address, when the stack was started with it on. */
  ollamaUrl: string | undefined;
  /** The gateway's usage records of the calls made with `key` (or the given key id), oldest first. */
  calls(keyId?: string): Promise<RequestView[]>;
  /** Waits until the calls made with a key satisfy `done`, as records are written when a call closes. */
  waitForCalls(done: (calls: RequestView[]) => boolean, keyId?: string, timeoutMs?: number): Promise<RequestView[]>;
  close(): Promise<void>;
}

export async function startStack(knobs: Partial<Knobs> = {}, options: { ollama?: boolean } = {}): Promise<Stack> {
  const sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: TOKENS, ...knobs } });
  // The Ollama door resolves names against llama-swap's model list, as `gatehouse serve` wires it.
  const models = options.ollama ? openUpstream({ kind: 'llama-swap', baseUrl: new URL(sim.url) }) : undefined;
  const gateway = await startUsageGateway(
    sim.url,
    // With the door: request bodies captured, so a cell can read what reached llama-swap.
    options.ollama ? { ollamaListen: { host: '127.0.0.1', port: 0 }, usageCaptureBytes: 8192 } : {},
    models ? { listModels: () => models.models() } : {},
  );
  const ollamaUrl = options.ollama ? await gateway.app.listenOllama(0, '127.0.0.1') : undefined;
  const key = await createKey(gateway, { name: 'matrix' });
  const restrictedKey = await createKey(gateway, { name: 'matrix-restricted', models: [CHAT_MODEL] });
  const calls = async (keyId = key.id) => (await listRequests(gateway, `key=${keyId}&limit=500`)).requests.toReversed();
  return {
    sim,
    gateway,
    key,
    restrictedKey,
    ollamaUrl,
    calls,
    async waitForCalls(done, keyId = key.id, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const seen = await calls(keyId);
        if (done(seen)) return seen;
        if (Date.now() > deadline) {
          const listed = seen.map((c) => `${c.endpoint} ${c.model ?? '-'} ${c.status} ${c.errorClass ?? ''}`);
          throw new Error(`the calls recorded after ${timeoutMs} ms never passed the check: ${listed.join('; ')}`);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async close() {
      await gateway.close();
      await models?.close();
      await sim.close();
    },
  };
}

/** Resolves once a streamed answer is under way at the simulator: the moment to cancel it. */
export function midStream(sim: Simulator, timeoutMs = 60_000): Promise<unknown> {
  return sim.waitFor(
    () => sim.received.find((r) => r.path.startsWith('/v1/') && r.closedAt === undefined && r.sentBytes.length > 400),
    timeoutMs,
  );
}
