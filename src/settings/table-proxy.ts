/** Settings of how calls are served: listening, llama-swap, timeouts, spooling, the queue, the Ollama door, logging. */
import {
  parseDuration,
  parseSize,
  parsePort,
  parseUrl,
  parseConnections,
  parseCount,
  parseDurationOrOff,
  parseString,
  parseOptional,
  parseListen,
  parseUpstreamKind,
  parseLogLevel,
} from './parsers.js';
import type { Settings, SettingSpec } from './types.js';

export const PROXY_SETTINGS: ReadonlyArray<SettingSpec<keyof Settings>> = [
  {
    key: 'host',
    env: 'HOST',
    flag: '--host',
    default: '0.0.0.0',
    parse: parseString,
    description: 'Address the gateway listens on.',
  },
  {
    key: 'port',
    env: 'PORT',
    flag: '--port',
    default: '3000',
    parse: parsePort,
    description: 'TCP port the gateway listens on (0 picks a free one).',
  },
  {
    key: 'upstreamUrl',
    env: 'GATEHOUSE_UPSTREAM_URL',
    flag: '--upstream',
    default: 'http://127.0.0.1:8080',
    parse: parseUrl,
    description: "llama-swap's base URL.",
  },
  {
    key: 'upstreamKind',
    env: 'GATEHOUSE_UPSTREAM_KIND',
    default: 'auto',
    parse: parseUpstreamKind,
    description:
      'What serves the models: `llama-swap`, `llama-server` (llama.cpp in router mode), or `auto` to ask the ' +
      'upstream at start and keep asking until it answers.',
  },
  {
    key: 'upstreamApiKey',
    env: 'GATEHOUSE_UPSTREAM_API_KEY',
    default: undefined,
    parse: parseOptional,
    secret: true,
    description:
      'Sent to llama-swap as `Authorization: Bearer` when llama-swap has `apiKeys` set. Client credentials ' +
      'are never forwarded.',
  },
  {
    key: 'connectTimeoutMs',
    env: 'GATEHOUSE_CONNECT_TIMEOUT',
    default: '10s',
    parse: parseDuration,
    description: 'Time allowed to open a connection to llama-swap (then 504; a refused connection is 502 at once).',
  },
  {
    key: 'headersTimeoutMs',
    env: 'GATEHOUSE_HEADERS_TIMEOUT',
    default: '10m',
    parse: parseDuration,
    description:
      "Time allowed until llama-swap's response headers arrive (then 504). Large models take minutes to load.",
  },
  {
    key: 'idleTimeoutMs',
    env: 'GATEHOUSE_IDLE_TIMEOUT',
    default: '5m',
    parse: parseDuration,
    description: 'Longest silence allowed inside a streamed response body (then one terminal error event).',
  },
  {
    key: 'upstreamConnections',
    env: 'GATEHOUSE_UPSTREAM_CONNECTIONS',
    default: '1024',
    parse: parseConnections,
    description:
      'Most connections open to llama-swap at once. Every stream holds one for its whole life; calls ' +
      'beyond wait for a free one.',
  },
  {
    key: 'bodyTimeoutMs',
    env: 'GATEHOUSE_BODY_TIMEOUT',
    flag: '--body-timeout',
    default: '60s',
    parse: parseDuration,
    description:
      'Longest pause between two bytes of a request body; then 408. Bodies are received whole before ' +
      'anything is forwarded.',
  },
  {
    key: 'spoolMaxBytes',
    env: 'GATEHOUSE_SPOOL_MAX_BYTES',
    default: '1GiB',
    parse: parseSize,
    description:
      'Most bytes of request bodies spooled to disk at once, all calls together; a call that would pass it ' +
      'gets 503 `spool_full` with Retry-After (413 when its body alone is larger).',
  },
  {
    key: 'spoolMaxPerKey',
    env: 'GATEHOUSE_SPOOL_MAX_PER_KEY',
    default: '8',
    parse: parseCount,
    description:
      'Most request bodies one API key may have spooled to disk at once; one more gets 503 `spool_full`. ' +
      '0 = no per-key cap.',
  },
  {
    key: 'bodyLimitBytes',
    env: 'GATEHOUSE_BODY_LIMIT',
    flag: '--body-limit',
    default: '50MiB',
    parse: parseSize,
    description: 'Largest request body accepted (then 413), counted as it arrives.',
  },
  {
    key: 'maxInflight',
    env: 'GATEHOUSE_MAX_INFLIGHT',
    default: '0',
    parse: parseCount,
    description:
      'Calls forwarded to llama-swap at once, all models together; more wait their turn in the admission ' +
      'queue. 0 = no cap.',
  },
  {
    key: 'maxInflightPerModel',
    env: 'GATEHOUSE_MAX_INFLIGHT_PER_MODEL',
    default: '0',
    parse: parseCount,
    description: 'Calls forwarded at once per model (aliases count as their model); more wait. 0 = no cap.',
  },
  {
    key: 'swapFairnessMs',
    env: 'GATEHOUSE_SWAP_FAIRNESS',
    default: '30s',
    parse: parseDuration,
    description:
      'Waiting calls for the model llama-swap has loaded go before calls that would make it swap, until the ' +
      'oldest waiting call has waited this long; then it goes first.',
  },
  {
    key: 'queueTimeoutMs',
    env: 'GATEHOUSE_QUEUE_TIMEOUT',
    default: '10m',
    parse: parseDuration,
    description: 'Longest wait in the admission queue; then 503 `queue_timeout` (never sent to llama-swap).',
  },
  {
    key: 'queueMax',
    env: 'GATEHOUSE_QUEUE_MAX',
    default: '1000',
    parse: parseCount,
    description: 'Most calls waiting at once; one more gets 503 `queue_full` at once.',
  },
  {
    key: 'queueMaxPerKey',
    env: 'GATEHOUSE_QUEUE_MAX_PER_KEY',
    default: undefined,
    parse: parseCount,
    description:
      "Most calls of one API key waiting at once, so one key cannot fill the queue; one more of that key's gets " +
      '503 `queue_full` at once while other keys still queue. Unset: half of `GATEHOUSE_QUEUE_MAX` (at least 1); ' +
      '`0`: no share, only `GATEHOUSE_QUEUE_MAX`. Counted per replica.',
  },
  {
    key: 'sseKeepAliveMs',
    env: 'GATEHOUSE_SSE_KEEPALIVE',
    default: '10s',
    parse: parseDurationOrOff,
    description:
      'A streaming call still without an answer from llama-swap after this long (queued, or its model ' +
      'loading) gets 200 and an SSE comment line at once, then one per interval until the first byte. ' +
      '0 = off. See docs/queue.md.',
  },
  {
    key: 'ollamaListen',
    env: 'GATEHOUSE_OLLAMA_LISTEN',
    default: undefined,
    parse: parseListen,
    description:
      'Serve the Ollama API on a listener of its own: `host:port` or a port (on 127.0.0.1), e.g. ' +
      "`127.0.0.1:11434`, Ollama's own port. Unset: off. Calls go through the same keys, limits, budgets, " +
      'queue and usage as `/v1`. See docs/ollama.md.',
  },
  {
    key: 'ollamaKey',
    env: 'GATEHOUSE_OLLAMA_KEY',
    default: undefined,
    parse: parseOptional,
    description:
      'The name of a key that calls to the Ollama listener without a key act as (its models, limits, budget, ' +
      'priority and usage), for clients that cannot send headers (Home Assistant, Copilot). A wrong key is ' +
      'still refused. Unset: such calls get 401 once any key exists.',
  },
  {
    key: 'shutdownGraceMs',
    env: 'GATEHOUSE_SHUTDOWN_GRACE',
    default: '30s',
    parse: parseDuration,
    description: 'On SIGTERM/SIGINT, how long in-flight requests and streams may run before the process exits.',
  },
  {
    key: 'logLevel',
    env: 'GATEHOUSE_LOG_LEVEL',
    flag: '--log-level',
    default: 'info',
    parse: parseLogLevel,
    description: 'pino log level: fatal, error, warn, info, debug, trace, silent.',
  },
];
