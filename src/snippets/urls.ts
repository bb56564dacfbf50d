/**
 * The two base URLs. Mixing them up is the most common client mistake:
 * OpenAI-style clients append `/chat/completions` to a base that must end in `/v1`, while the
 * Anthropic SDKs and Claude Code append `/v1/messages` themselves, so `/v1` there gives
 * `/v1/v1/messages` and a 404.
 */

/** `origin` without trailing slashes and without a trailing `/v1`, so a pasted base URL works too. */
export function normalizeOrigin(origin: string): string {
  return origin.trim().replace(/\/+$/, '').replace(/\/v1$/, '').replace(/\/+$/, '');
}

/** OpenAI base URL: always ends in `/v1`. */
export function openaiBaseUrl(origin: string): string {
  return `${normalizeOrigin(origin)}/v1`;
}

/** Anthropic base URL: the origin, never ending in `/v1`. */
export function anthropicBaseUrl(origin: string): string {
  return normalizeOrigin(origin);
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1', '0.0.0.0']);

function isLoopback(origin: string): boolean {
  const host = new URL(normalizeOrigin(origin)).hostname;
  return LOOPBACK.has(host) || host.endsWith('.localhost');
}

/**
 * The origin as a container sees it. Inside a container `localhost` is the container itself,
 * so a loopback origin becomes `host.docker.internal` (which needs `--add-host` on Linux);
 * a LAN address works as it is.
 */
export function containerOrigin(origin: string): { origin: string; viaHostGateway: boolean } {
  const normalized = normalizeOrigin(origin);
  if (!isLoopback(normalized)) return { origin: normalized, viaHostGateway: false };
  const url = new URL(normalized);
  url.hostname = 'host.docker.internal';
  // href, not origin: a path prefix (GATEHOUSE_PUBLIC_URL=http://localhost:3000/llm) must stay.
  return { origin: normalizeOrigin(url.href), viaHostGateway: true };
}

/** The gateway's port as the client sees it (the scheme default when the origin has none). */
export function originPort(origin: string): number {
  const url = new URL(normalizeOrigin(origin));
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** Ollama's own port, which Ollama clients assume and the documented GATEHOUSE_OLLAMA_LISTEN uses. */
export const OLLAMA_PORT = 11434;

/**
 * The Ollama door's address: the host clients know the gateway by, with the door's port. The
 * door is a plain HTTP listener of its own, so no scheme or path prefix of the gateway's carries over.
 */
export function ollamaOrigin(origin: string, port: number = OLLAMA_PORT): string {
  const host = new URL(normalizeOrigin(origin)).hostname;
  return `http://${host}:${port}`;
}
