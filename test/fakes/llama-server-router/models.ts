/**
 * The router's model table: each model's status (`unloaded` → `loading` → `loaded`, back to
 * `unloaded`; `failed` + `exit_code` after a start that failed), least-recently-used eviction
 * when `modelsMax` models run, and load/unload times. Follows llama.cpp
 * `tools/server/server-models.cpp` (`server_models::load`, `unload_lru`, `unload`).
 */
import type { ChangeNotifier } from '../llama-swap/recorder.js';

export interface RouterModelConfig {
  id: string;
  aliases?: string[];
  /** The child exits while starting (status back to `unloaded` with `failed: true`). */
  failToLoad?: boolean;
  /** Started with `--embeddings`: completion endpoints answer 501. */
  embeddings?: boolean;
  /** Started with reasoning extraction on: answers think first (as the llama-swap simulator's `--reasoning-format`). */
  reasoning?: boolean;
  /** Reads images (`architecture.input_modalities` gets `image`). */
  vision?: boolean;
}

export type RouterStatus = 'unloaded' | 'loading' | 'loaded';

export interface RouterModel {
  readonly config: RouterModelConfig;
  status: RouterStatus;
  /** A counter, not a clock: which running model was used least recently. */
  lastUsed: number;
  failed: boolean;
  exitCode: number;
  /** How many times the model was started. */
  loads: number;
  /** Settles when the current load or unload is over. */
  settling: Promise<void> | undefined;
}

export interface RouterTimings {
  loadDelayMs: number;
  unloadDelayMs: number;
}

export class RouterModels {
  readonly #models = new Map<string, RouterModel>();
  #tick = 0;

  constructor(
    configs: readonly RouterModelConfig[],
    readonly modelsMax: number,
    readonly timings: RouterTimings,
    private readonly changes: ChangeNotifier,
  ) {
    for (const config of configs) {
      this.#models.set(config.id, {
        config,
        status: 'unloaded',
        lastUsed: 0,
        failed: false,
        exitCode: 0,
        loads: 0,
        settling: undefined,
      });
    }
  }

  all(): RouterModel[] {
    return [...this.#models.values()];
  }

  /** By name or alias (`get_meta`). */
  find(name: string): RouterModel | undefined {
    const direct = this.#models.get(name);
    if (direct) return direct;
    return this.all().find((m) => m.config.aliases?.includes(name));
  }

  running(): RouterModel[] {
    return this.all().filter((m) => m.status !== 'unloaded');
  }

  touch(model: RouterModel): void {
    model.lastUsed = ++this.#tick;
  }

  /** Starts a load after evicting the least recently used model when `modelsMax` run; resolves once it started. */
  async load(model: RouterModel): Promise<void> {
    if (model.status !== 'unloaded') return;
    const running = this.running();
    if (this.modelsMax > 0 && running.length >= this.modelsMax) {
      const lru = running.reduce((a, b) => (b.lastUsed < a.lastUsed ? b : a));
      this.unload(lru);
      await lru.settling;
    }
    model.status = 'loading';
    model.failed = false;
    model.exitCode = 0;
    model.loads++;
    this.touch(model);
    this.changes.notify();
    model.settling = delay(this.timings.loadDelayMs).then(() => {
      if (model.status !== 'loading') return;
      if (model.config.failToLoad) {
        model.status = 'unloaded';
        model.failed = true;
        model.exitCode = 1;
      } else {
        model.status = 'loaded';
      }
      this.changes.notify();
    });
  }

  /** Asks the child to exit; the status goes `unloaded` after `unloadDelayMs`. */
  unload(model: RouterModel): void {
    if (model.status === 'unloaded') return;
    model.settling = delay(this.timings.unloadDelayMs).then(() => {
      model.status = 'unloaded';
      this.changes.notify();
    });
  }

  /** Autoload (`ensure_model_ready`): starts the model if needed and waits until it is up. */
  async ready(model: RouterModel): Promise<boolean> {
    if (model.status === 'unloaded') await this.load(model);
    await model.settling;
    return model.status === 'loaded';
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
