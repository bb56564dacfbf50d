/**
 * The one place that calls fetch. Every admin error becomes an ApiError parsed from the admin
 * error shape `{"error":{"code","message","details"}}`; anything else (a proxy's HTML page, a
 * bare 404, a dropped connection) still becomes an ApiError with a code the UI can show.
 */

export interface FieldIssue {
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown;
  /** Seconds from a `Retry-After` header (429), when present. */
  readonly retryAfter: number | null;

  constructor(init: { status: number; code: string; message: string; details?: unknown; retryAfter?: number | null }) {
    super(init.message);
    this.name = 'ApiError';
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.retryAfter = init.retryAfter ?? null;
  }

  /** `details` entries shaped `{path, message}` (JSON-pointer paths), e.g. for form fields. */
  get issues(): FieldIssue[] {
    if (!Array.isArray(this.details)) return [];
    return this.details.filter(
      (d): d is FieldIssue =>
        typeof d === 'object' &&
        d !== null &&
        typeof (d as FieldIssue).path === 'string' &&
        typeof (d as FieldIssue).message === 'string',
    );
  }

  /** The message for one field (`/name`), or undefined. */
  issueFor(path: string): string | undefined {
    return this.issues.find((issue) => issue.path === path || issue.path.startsWith(`${path}/`))?.message;
  }
}

export function isApiError(value: unknown): value is ApiError {
  return value instanceof ApiError;
}

/** Any thrown value as something a person can read. */
export function errorMessage(value: unknown): string {
  if (value instanceof Error) return value.message;
  return String(value);
}

let unauthorizedHandler: (() => void) | undefined;

/** Called on every 401 from a route that needs a session (not on a wrong password). */
export function onUnauthorized(handler: () => void): void {
  unauthorizedHandler = handler;
}

export function notifyUnauthorized(): void {
  unauthorizedHandler?.();
}

export interface RequestOptions {
  /** JSON body. POST/PUT/PATCH always send one (`{}` when empty): the CSRF check wants JSON. */
  body?: unknown;
  query?: Record<string, string | undefined>;
  signal?: AbortSignal;
  /**
   * false for routes where 401 means "wrong password" rather than "signed out"
   * (sign-in, change password).
   */
  signOutOn401?: boolean;
}

/** `path?name=value&...`, leaving out the undefined values. */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, value);
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export async function request<T>(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  options: RequestOptions = {},
): Promise<T> {
  const { signal, signOutOn401 = true } = options;
  const body = options.body ?? (method === 'POST' || method === 'PUT' || method === 'PATCH' ? {} : undefined);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';

  const url = options.query ? withQuery(path, options.query) : path;

  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
      signal,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new ApiError({
      status: 0,
      code: 'network_error',
      message: 'The gateway could not be reached. Check that Gatehouse is running.',
    });
  }

  const text = await response.text().catch(() => '');
  const json = parseJson(text, response.headers.get('content-type'));

  if (!response.ok) {
    const error = toApiError(response, json, method, path);
    if (response.status === 401 && signOutOn401) notifyUnauthorized();
    throw error;
  }
  return (json ?? {}) as T;
}

function parseJson(text: string, contentType: string | null): unknown {
  if (text === '' || !contentType?.includes('json')) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function toApiError(response: Response, json: unknown, method: string, path: string): ApiError {
  const retryAfterHeader = response.headers.get('retry-after');
  const retryAfter = retryAfterHeader !== null && /^\d+$/.test(retryAfterHeader) ? Number(retryAfterHeader) : null;
  const shaped = (json as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
  if (shaped && typeof shaped === 'object' && typeof shaped.code === 'string' && typeof shaped.message === 'string') {
    return new ApiError({
      status: response.status,
      code: shaped.code,
      message: shaped.message,
      details: shaped.details,
      retryAfter,
    });
  }
  // Not the admin shape: an older gateway, a reverse proxy in between, or no admin API at all.
  const code =
    response.status === 404 ? 'not_found' : response.status === 401 ? 'admin_unauthorized' : `http_${response.status}`;
  const message =
    response.status === 404
      ? `The gateway has no ${method} ${path} route (HTTP 404). Is this Gatehouse with its admin API enabled?`
      : `${method} ${path} failed with HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}.`;
  return new ApiError({ status: response.status, code, message, retryAfter });
}
