import { CATALOGUE, type GatewayError } from './errors.js';
import type { WireFormat } from './wire-format.js';

/** The body of an error in one wire format. The only place error JSON is shaped. */
export function errorBody(error: GatewayError, format: WireFormat): Record<string, unknown> {
  const entry = error.code === 'upstream_error' ? typesForStatus(error.status) : CATALOGUE[error.code];
  switch (format) {
    case 'anthropic':
      return { type: 'error', error: { type: entry.anthropicType, message: error.message } };
    case 'admin': {
      const body: Record<string, unknown> = { error: { code: error.code, message: error.message } };
      if (error.details !== undefined) (body.error as Record<string, unknown>).details = error.details;
      return body;
    }
    case 'ollama':
      // Ollama's one error shape; its clients read `error` as the message.
      return { error: error.message };
    case 'openai':
      return {
        error: {
          message: error.message,
          type: entry.openaiType,
          param: error.param,
          code: error.upstreamCode ?? error.code,
        },
      };
  }
}

/**
 * The frame that ends a stream which already sent its headers: one Server-Sent Event, or for
 * Ollama's NDJSON streams one line (its clients throw on a line carrying `error`).
 */
export function terminalStreamEvent(error: GatewayError, format: WireFormat): string {
  const body = JSON.stringify(errorBody(error, format));
  if (format === 'ollama') return `${body}\n`;
  // Anthropic streams use named events (`event: error`); OpenAI streams carry bare data frames.
  return format === 'anthropic' ? `event: error\ndata: ${body}\n\n` : `data: ${body}\n\n`;
}

/**
 * Types for an error relayed with upstream's status: OpenAI's per llama-swap `httperror.go`,
 * Anthropic's per its documented error types.
 */
function typesForStatus(status: number): { openaiType: string; anthropicType: string } {
  switch (status) {
    case 400:
      return { openaiType: 'invalid_request_error', anthropicType: 'invalid_request_error' };
    case 401:
      return { openaiType: 'authentication_error', anthropicType: 'authentication_error' };
    case 403:
      return { openaiType: 'authentication_error', anthropicType: 'permission_error' };
    case 404:
      return { openaiType: 'invalid_request_error', anthropicType: 'not_found_error' };
    case 413:
      return { openaiType: 'invalid_request_error', anthropicType: 'request_too_large' };
    case 429:
      return { openaiType: 'rate_limit_error', anthropicType: 'rate_limit_error' };
    case 503:
      return { openaiType: 'server_error', anthropicType: 'overloaded_error' };
    case 504:
      return { openaiType: 'server_error', anthropicType: 'timeout_error' };
    default:
      return status < 500
        ? { openaiType: 'invalid_request_error', anthropicType: 'invalid_request_error' }
        : { openaiType: 'server_error', anthropicType: 'api_error' };
  }
}
