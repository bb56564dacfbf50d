/**
 * Ollama model names carry a tag (`qwen3:8b`, `llama3:latest`); llama-swap's IDs usually do not.
 * An ID without a tag is listed as `<id>:latest`, and a call may name it either way.
 */

/** The name an Ollama client sees for a llama-swap ID. */
export function listedName(id: string): string {
  return id.includes(':') ? id : `${id}:latest`;
}

/**
 * The llama-swap name a call's model means: the name itself when llama-swap knows it, else the
 * name without `:latest`; undefined when neither is known.
 */
export function upstreamName(requested: string, known: (name: string) => boolean): string | undefined {
  if (known(requested)) return requested;
  if (requested.endsWith(':latest')) {
    const bare = requested.slice(0, -':latest'.length);
    if (bare !== '' && known(bare)) return bare;
  }
  return undefined;
}
