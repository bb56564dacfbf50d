/**
 * The one catalogue of errors the gateway itself produces. Handlers and middleware throw
 * `GatewayError`; `render-error.ts` turns it into the caller's wire format. Nothing else in
 * the code base builds error JSON.
 */

export type ErrorCode = keyof typeof CATALOGUE;

interface CatalogueEntry {
  status: number;
  /** OpenAI `error.type` */
  openaiType: string;
  /** Anthropic `error.type` */
  anthropicType: string;
  message: string;
}

/**
 * Status → OpenAI/Anthropic types follow llama-swap's `httperror.go` mapping and Anthropic's
 * published error types, so clients that branch on them behave as they would against either.
 */
export const CATALOGUE = {
  bad_request: {
    status: 400,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'Bad request.',
  },
  invalid_json: {
    status: 400,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'The request body is not valid JSON.',
  },
  missing_api_key: {
    status: 401,
    openaiType: 'authentication_error',
    anthropicType: 'authentication_error',
    message: 'Missing API key. Send it as "Authorization: Bearer <key>" or "x-api-key: <key>".',
  },
  invalid_api_key: {
    status: 401,
    openaiType: 'authentication_error',
    anthropicType: 'authentication_error',
    message: 'Invalid API key.',
  },
  revoked_api_key: {
    status: 401,
    openaiType: 'authentication_error',
    anthropicType: 'authentication_error',
    message: 'This API key has been revoked.',
  },
  expired_api_key: {
    status: 401,
    openaiType: 'authentication_error',
    anthropicType: 'authentication_error',
    message: 'This API key has expired.',
  },
  model_not_allowed: {
    status: 403,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
    message: 'This API key may not use the requested model.',
  },
  model_required: {
    status: 403,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
    message:
      'This API key may only use some models, and the model this call asks for could not be read with certainty.',
  },
  manage_scope_required: {
    status: 403,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
    message:
      'This API key may not manage models: GET /models, POST /models/load and POST /models/unload need a key ' +
      'with the manage scope.',
  },
  admin_unauthorized: {
    status: 401,
    openaiType: 'authentication_error',
    anthropicType: 'authentication_error',
    message: 'Admin authentication required.',
  },
  metrics_unauthorized: {
    status: 401,
    openaiType: 'authentication_error',
    anthropicType: 'authentication_error',
    message: 'GET /metrics needs "Authorization: Bearer <GATEHOUSE_METRICS_TOKEN>".',
  },
  admin_forbidden: {
    status: 403,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
    message: 'Forbidden.',
  },
  oidc_failed: {
    status: 401,
    openaiType: 'authentication_error',
    anthropicType: 'authentication_error',
    message: 'The sign-in with the identity provider could not be completed. Start it again.',
  },
  oidc_not_invited: {
    status: 403,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
    message: 'The identity provider knows you, but no one has added you to this gateway. Ask an admin to invite you.',
  },
  oidc_no_role: {
    status: 403,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
    message: 'Your account at the identity provider is in none of the groups this gateway lets in.',
  },
  user_disabled: {
    status: 403,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
    message: 'This user is disabled. Ask an admin to enable it.',
  },
  csrf_rejected: {
    status: 403,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
    message: 'Cross-site request refused.',
  },
  not_found: {
    status: 404,
    openaiType: 'invalid_request_error',
    anthropicType: 'not_found_error',
    message: 'Not found.',
  },
  method_not_allowed: {
    status: 405,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'Method not allowed.',
  },
  body_timeout: {
    status: 408,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'The request body stopped arriving (GATEHOUSE_BODY_TIMEOUT between bytes).',
  },
  request_timeout: {
    status: 408,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'The request did not arrive in time.',
  },
  conflict: {
    status: 409,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'Conflict.',
  },
  body_too_large: {
    status: 413,
    openaiType: 'invalid_request_error',
    anthropicType: 'request_too_large',
    message: 'The request body is too large.',
  },
  unsupported_media_type: {
    status: 415,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'Unsupported content type.',
  },
  request_headers_too_large: {
    status: 431,
    openaiType: 'invalid_request_error',
    anthropicType: 'request_too_large',
    message: 'The request line and headers are too large.',
  },
  validation_failed: {
    status: 422,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'Validation failed.',
  },
  rate_limited: {
    status: 429,
    openaiType: 'rate_limit_error',
    anthropicType: 'rate_limit_error',
    message: 'Rate limit exceeded.',
  },
  budget_exceeded: {
    status: 429,
    openaiType: 'rate_limit_error',
    anthropicType: 'rate_limit_error',
    message: "The API key's budget for this period is used up.",
  },
  internal_error: {
    status: 500,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'Internal gateway error.',
  },
  audit_write_failed: {
    status: 500,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'The audit log could not be written.',
  },
  upstream_error: {
    status: 500,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'The upstream returned an error.',
  },
  upstream_unreachable: {
    status: 502,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'The upstream (llama-swap) could not be reached.',
  },
  upstream_bad_gateway: {
    status: 502,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'The upstream (llama-swap) failed to produce a response.',
  },
  not_implemented: {
    status: 501,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'Not implemented.',
  },
  service_unavailable: {
    status: 503,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
    message: 'Service unavailable.',
  },
  oidc_unavailable: {
    status: 502,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'The identity provider could not be reached. Try again, or sign in with a password.',
  },
  queue_full: {
    status: 503,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
    message: 'Too many calls are waiting for the models (GATEHOUSE_QUEUE_MAX); this one was not queued.',
  },
  spool_full: {
    status: 503,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
    message: 'Too many request bodies are being received at once (GATEHOUSE_SPOOL_MAX_BYTES); this one was not taken.',
  },
  queue_timeout: {
    status: 503,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
    message: 'The call waited too long for its turn (GATEHOUSE_QUEUE_TIMEOUT) and was not sent to the model.',
  },
  shutting_down: {
    status: 503,
    openaiType: 'server_error',
    anthropicType: 'overloaded_error',
    message: 'The gateway is shutting down.',
  },
  upstream_timeout: {
    status: 504,
    openaiType: 'server_error',
    anthropicType: 'timeout_error',
    message: 'The upstream did not answer in time.',
  },
  upstream_idle_timeout: {
    status: 504,
    openaiType: 'server_error',
    anthropicType: 'timeout_error',
    message: 'The upstream stream went idle for too long.',
  },
  upstream_stream_failed: {
    status: 502,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'The upstream stream failed.',
  },
  upstream_truncated: {
    status: 502,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'The upstream stream ended without its final event: the answer is incomplete.',
  },
  // Config editor (llama-swap's config.yaml; src/config-editor).
  config_disabled: {
    status: 409,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'The config editor is off.',
  },
  config_conflict: {
    status: 409,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'The config file changed on disk since it was loaded; nothing was written.',
  },
  config_read_only: {
    status: 403,
    openaiType: 'permission_error',
    anthropicType: 'permission_error',
    message: 'The config file is read-only; nothing was written.',
  },
  config_invalid: {
    status: 422,
    openaiType: 'invalid_request_error',
    anthropicType: 'invalid_request_error',
    message: 'The config is not valid; nothing was written.',
  },
  config_write_failed: {
    status: 500,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'Writing the config file failed.',
  },
  schema_unavailable: {
    status: 503,
    openaiType: 'server_error',
    anthropicType: 'api_error',
    message: 'No llama-swap config schema is available, so the config cannot be validated; nothing was written.',
  },
} as const satisfies Record<string, CatalogueEntry>;

export interface GatewayErrorOptions {
  /** Overrides the catalogue's message with something more specific. */
  message?: string;
  /** OpenAI `param`. */
  param?: string | null;
  /** Extra headers to send with the error (e.g. `Retry-After`). */
  headers?: Record<string, string>;
  /** Machine-readable details for the admin API shape (field errors, YAML positions...). */
  details?: unknown;
  /** Overrides the catalogue status (used when relaying an upstream error status). */
  status?: number;
  /** llama-swap's own `code` (`concurrency_limit`, `not_found`...), rendered in place of ours. */
  upstreamCode?: string;
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | null;
  readonly headers: Record<string, string>;
  readonly details: unknown;
  readonly upstreamCode: string | undefined;

  constructor(code: ErrorCode, options: GatewayErrorOptions = {}) {
    const entry: CatalogueEntry = CATALOGUE[code];
    super(options.message ?? entry.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? entry.status;
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
    this.details = options.details;
    this.upstreamCode = options.upstreamCode;
  }
}

export function isGatewayError(error: unknown): error is GatewayError {
  return error instanceof GatewayError;
}
