/**
 * The model list the live view shows: read from `/v1/models` and `/running` once per connection
 * (or poll), then kept current by `modelStatus` events; a model that starts with an unknown TTL
 * costs one more `/running`. Says each change to its listener, never the same list twice.
 */
import type { Model, ModelList } from '../admin-api/types.js';
import type { Upstream } from '../management-client/upstream.js';
import type { ModelStatusEntry, VersionInfo } from '../management-client/types.js';
import { aliasTargetsOf, applyStatus, mergeModels } from './model-list.js';

export class ModelTracker {
  #list: ModelList | null = null;
  #aliasTargets: Map<string, string> | null = null;
  #ttls = new Map<string, number>();
  /** The latest `modelStatus`, and whether it came while the list was being read. */
  #status: ModelStatusEntry[] | null = null;
  #statusDuringRead = false;
  #reading: Promise<unknown> | null = null;
  #ttlRead: Promise<void> | null = null;

  constructor(
    private readonly client: Upstream,
    private readonly onChange: (list: ModelList) => void,
  ) {}

  get list(): ModelList | null {
    return this.#list;
  }

  /**
   * Reads the list (and the version, when asked), one read at a time; rejects when llama-swap
   * does not answer, leaving the list to `unreachable()`.
   */
  read(withVersion: boolean): Promise<VersionInfo | null | undefined> {
    const previous = this.#reading ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.#read(withVersion));
    const tracked = next.finally(() => {
      if (this.#reading === tracked) this.#reading = null;
    });
    this.#reading = tracked;
    return tracked;
  }

  /** A `modelStatus` event: every local model's state. */
  status(entries: ModelStatusEntry[]): void {
    this.#status = entries;
    if (this.#reading) this.#statusDuringRead = true;
    else this.#apply();
  }

  unreachable(reason: string): void {
    this.#set({ reachable: false, error: reason, models: [] });
  }

  async #read(withVersion: boolean): Promise<VersionInfo | null | undefined> {
    this.#statusDuringRead = false;
    const [version, models, running] = await Promise.all([
      withVersion ? this.client.version().catch(() => null) : Promise.resolve(undefined),
      this.client.models(),
      this.client.running(),
    ]);
    this.#aliasTargets = aliasTargetsOf(models);
    this.#ttls = new Map(running.map((r) => [r.model, r.ttl]));
    this.#set({ reachable: true, error: null, models: mergeModels(models, running) });
    // A status that came meanwhile may be newer than `/running`; any later change brings another.
    if (this.#statusDuringRead) this.#apply();
    return version;
  }

  #apply(): void {
    if (!this.#aliasTargets || !this.#list?.reachable || !this.#status) return;
    const models = applyStatus(this.#list.models, this.#status, this.#ttls, this.#aliasTargets);
    this.#set({ ...this.#list, models });
    if (models.some((m) => m.kind === 'model' && m.state !== 'stopped' && !this.#ttls.has(m.id))) this.#readTtls();
  }

  /** A model started since the list was read: its TTL comes from `/running`, once. */
  #readTtls(): void {
    if (this.#ttlRead) return;
    this.#ttlRead = this.client
      .running()
      .then((running) => {
        for (const r of running) this.#ttls.set(r.model, r.ttl);
        this.#apply();
      })
      .catch(() => undefined)
      .finally(() => (this.#ttlRead = null));
  }

  #set(next: ModelList): void {
    if (this.#list && sameList(this.#list, next)) return;
    this.#list = next;
    this.onChange(next);
  }
}

function sameList(a: ModelList, b: ModelList): boolean {
  if (a.reachable !== b.reachable || a.error !== b.error || a.models.length !== b.models.length) return false;
  return a.models.every((m, i) => sameModel(m, b.models[i]!));
}

function sameModel(a: Model, b: Model): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
