/**
 * The parts of undici the gateway uses, loaded without undici's index.
 *
 * Why: `import ... from 'undici'` loads all of undici (fetch, WebSocket, EventSource, caches,
 * mock agents): ~3 MB of heap and ~8 MB of resident memory that the gateway never uses,
 * measured with one `node` process importing each. The RSS bar (1,000 idle streams, 120 MB)
 * is what pays for it. These are undici's own modules, loaded by the same paths its index
 * loads them; the version is pinned by package-lock.json, and every proxy and llama-swap
 * client test runs through them, so a moved file fails the suite at once.
 *
 * `request()` is undici's `Dispatcher#request`, which undici's index attaches to the
 * dispatcher prototype; here it is called on the pool instead, leaving undici's prototypes
 * as undici set them.
 */
import { createRequire } from 'node:module';
import type { Dispatcher, errors as UndiciErrors, Pool as UndiciPool } from 'undici';

const load = createRequire(import.meta.url);

export const Pool = load('undici/lib/dispatcher/pool.js') as typeof UndiciPool;
export type Pool = UndiciPool;

export const errors = load('undici/lib/core/errors.js') as typeof UndiciErrors;

const apiRequest = load('undici/lib/api/api-request.js') as (this: Dispatcher, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;

/** `pool.request(options)`, as undici's index would provide it. */
export function request(dispatcher: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
  return apiRequest.call(dispatcher, options);
}
