/**
 * Admin API for the dashboard's Endpoints page: `GET /api/endpoints`. The route and its admin
 * chain are in the route table; this is only the handler.
 *
 * The page builds every base URL and snippet itself (src/snippets, in the browser); all it
 * needs from the server is what the browser cannot know: the public address clients use
 * (`GATEHOUSE_PUBLIC_URL`), whether `/v1` is in open mode, and the Ollama door's port.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EndpointsInfo } from '../../admin-api/types.js';
import type { KeyVerifier } from '../../auth/key-index.js';

export interface EndpointsHandlerDeps {
  /** `GATEHOUSE_PUBLIC_URL`, already validated and without a trailing slash. */
  publicUrl: string | undefined;
  /** The keys `/v1` authenticates with: open mode is exactly "no key record at all". */
  keys: Pick<KeyVerifier, 'hasAnyKeys'>;
  /** `GATEHOUSE_OLLAMA_LISTEN`'s port; undefined when the door is off. */
  ollamaPort: number | undefined;
  /** `GATEHOUSE_OLLAMA_KEY` is set: keyless Ollama calls act as that key. */
  ollamaKeyless: boolean;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<EndpointsInfo>;

export function createEndpointsHandler({ publicUrl, keys, ollamaPort, ollamaKeyless }: EndpointsHandlerDeps): Handler {
  const ollama = ollamaPort === undefined ? null : { port: ollamaPort, keyless: ollamaKeyless };
  return async (_request, reply) => {
    // apiOpen flips when the first key is created: never a cached answer.
    void reply.header('cache-control', 'no-store');
    return { publicUrl: publicUrl ?? null, apiOpen: !keys.hasAnyKeys(), ollama };
  };
}
