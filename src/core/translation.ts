/** How a door that speaks another API (Ollama) has llama-swap's answer rewritten for its caller. */

/**
 * Rewrites llama-swap's answer for a caller that speaks another API (the Ollama door). The usage
 * tap still reads llama-swap's bytes; the client gets what this returns.
 */
export interface ResponseTranslator {
  /** The client's `Content-Type` in place of llama-swap's. */
  readonly contentType: string;
  /** The client's bytes for one chunk of llama-swap's body ('' while nothing is complete). */
  chunk(chunk: Buffer): string;
  /** The client's last bytes once llama-swap's body is complete. */
  end(): string;
}

/** What a door sends llama-swap instead of the client's request, and how the answer comes back. */
export interface UpstreamTranslation {
  /** llama-swap's path (`/v1/chat/completions`...), forwarded in place of the client's. */
  readonly path: string;
  /** The translator of a successful answer; undefined: relayed as it is. */
  response(status: number, contentType: string | undefined): ResponseTranslator | undefined;
}
