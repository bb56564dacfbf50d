/**
 * `GET /api/usage/summary`, `GET /api/usage/requests`, `GET /api/usage/requests/:id` and
 * `GET /api/usage/export`: their queries and answers. An empty parameter is an absent one
 * (except the summary's). What a schema cannot say is checked by the handlers: that a time parses,
 * that a cursor came from a previous page, that `to` is after `from`.
 */
import { Type, type TSchema } from 'typebox';
import { Iso, messages } from './common.js';

const literals = <const T extends readonly string[]>(values: T, options: object = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const UsageRange = literals(['1h', '24h', '30d']);
export const UsageGroupBy = literals(['key', 'model']);

const UsageLatency = Type.Object({
  avg: Type.Number(),
  p50: Type.Number({ description: 'Estimated from a fixed histogram: within about ±20 %.' }),
  p95: Type.Number(),
  p99: Type.Number(),
});

const statsFields = {
  requests: Type.Integer(),
  errors: Type.Integer(),
  aborted: Type.Integer(),
  inputTokens: Type.Integer({ description: 'Cached tokens included.' }),
  outputTokens: Type.Integer(),
  cachedTokens: Type.Integer(),
  latencyMs: Type.Union([UsageLatency, Type.Null()], { description: 'null with no calls.' }),
};

export const UsageStats = Type.Object(statsFields);

export const UsagePoint = Type.Object({ ...statsFields, t: Iso });

export const UsageGroup = Type.Object({
  key: Type.Optional(
    Type.Object(
      { id: nullable(Type.String()), name: nullable(Type.String()) },
      { description: 'groupBy=key: `id: null` for calls without a key (open mode, refused keys).' },
    ),
  ),
  model: Type.Optional(nullable(Type.String())),
  totals: UsageStats,
  series: Type.Array(UsagePoint),
});

/** `GET /api/usage/summary`. */
export const UsageSummary = Type.Object({
  range: UsageRange,
  groupBy: nullable(UsageGroupBy),
  from: Iso,
  to: Iso,
  stepMs: Type.Integer(),
  totals: UsageStats,
  series: Type.Array(UsagePoint, { description: 'Zero-filled, oldest first; the last bucket holds "now".' }),
  groups: Type.Array(UsageGroup, { description: 'Most requests first.' }),
});

const TokensSource = literals(['usage', 'timings', 'estimate']);

const requestFields = {
  id: Type.String(),
  at: Iso,
  requestId: Type.String(),
  key: nullable(Type.Object({ id: Type.String(), name: nullable(Type.String()) })),
  owner: Type.Union([Type.Object({ id: Type.String(), name: Type.String() }), Type.Null()], {
    description: "The user who owns the call's key (now); null for keys without an owner or calls without a key.",
  }),
  model: nullable(Type.String()),
  method: Type.String(),
  endpoint: Type.String(),
  status: Type.Integer({ description: '499 when the client left before a status was sent.' }),
  streamed: Type.Boolean(),
  inputTokens: nullable(Type.Integer()),
  outputTokens: nullable(Type.Integer()),
  cachedTokens: nullable(Type.Integer()),
  tokensSource: nullable(TokensSource),
  ttfbMs: nullable(Type.Number()),
  ttftMs: nullable(Type.Number()),
  durationMs: nullable(Type.Number()),
  bytesIn: nullable(Type.Integer()),
  bytesOut: nullable(Type.Integer()),
  clientAborted: Type.Boolean(),
  errorClass: nullable(Type.String()),
  queueMs: Type.Union([Type.Number(), Type.Null()], {
    description: 'Time the call waited for its turn, ms; null when it never reached the queue.',
  }),
  captured: Type.Boolean(),
};

export const UsageRequest = Type.Object(requestFields);

export const UsageRequestDetail = Type.Object({
  ...requestFields,
  requestBody: Type.Union([Type.String(), Type.Null()], {
    description: "Only with GATEHOUSE_USAGE_CAPTURE_BYTES set, and only to admins and the key's owner.",
  }),
  responseBody: nullable(Type.String()),
  bodiesWithheld: Type.Boolean({
    description: "Bodies were captured, but the caller's role may not read them (a viewer): both are null.",
  }),
});

/** `GET /api/usage/requests/:id`. */
export const UsageRequestFound = Type.Object({ request: UsageRequestDetail });

/** `GET /api/usage/requests`. */
export const UsageRequestPage = Type.Object({
  requests: Type.Array(UsageRequest),
  nextCursor: nullable(Type.String()),
});

export const UsageRequestParams = Type.Object({ id: Type.String() });

export const USAGE_EXPORT_GROUPS = ['call', 'key', 'model', 'day'] as const;
export const USAGE_EXPORT_FORMATS = ['csv', 'json'] as const;

const unknownParameter = { additionalProperties: false, ...messages({ additionalProperties: 'unknown parameter' }) };

/** `GET /api/usage/summary?range=&groupBy=`. */
export const UsageSummaryQuery = Type.Object(
  {
    range: Type.Optional(
      literals(['1h', '24h', '30d'], {
        description: 'Default 24h.',
        ...messages({ '*': 'must be one of 1h, 24h, 30d' }),
      }),
    ),
    groupBy: Type.Optional(literals(['key', 'model'], messages({ '*': 'must be key or model' }))),
  },
  unknownParameter,
);

const once = (options: object = {}) => Type.String({ ...options, ...messages({ type: 'must be given once' }) });

const STATUS_MESSAGE = 'must be a status code (429) or a class (2xx, 4xx, 5xx)';
const status = Type.String({
  pattern: '^(?:|\\s*[1-5](?:\\d\\d|[xX][xX])\\s*)$',
  description: 'A code (`429`) or a class (`2xx`).',
  ...messages({ '*': STATUS_MESSAGE }),
});

const TIME_MESSAGE = 'must be an ISO 8601 date-time, e.g. 2030-01-31T12:00:00Z';
/** Read by `Date.parse` once it starts with a date. */
const time = (description: string) =>
  Type.String({ pattern: '^(?:$|\\d{4}-\\d{2}-\\d{2})', description, ...messages({ '*': TIME_MESSAGE }) });

const REQUESTS_MAX_LIMIT = 500;

/** `GET /api/usage/requests`: the filters (every one optional) and the page. */
export const UsageRequestsQuery = Type.Object(
  {
    key: Type.Optional(once()),
    model: Type.Optional(once()),
    status: Type.Optional(status),
    from: Type.Optional(time('Inclusive.')),
    to: Type.Optional(time('Exclusive.')),
    cursor: Type.Optional(
      Type.String({
        description: 'The `nextCursor` of the previous page.',
        ...messages({ '*': 'is not a cursor from a previous page (nextCursor)' }),
      }),
    ),
    limit: Type.Optional(
      Type.String({
        pattern: `^(?:|0*(?:[1-9]\\d?|[1-4]\\d\\d|${REQUESTS_MAX_LIMIT}))$`,
        description: `1 to ${REQUESTS_MAX_LIMIT} calls (default 100).`,
        ...messages({ '*': `must be a whole number from 1 to ${REQUESTS_MAX_LIMIT}` }),
      }),
    ),
  },
  unknownParameter,
);

/** `GET /api/usage/export`: the request log (`call`) or its sums per key, model or UTC day. */
export const UsageExportQuery = Type.Object(
  {
    from: Type.Optional(time('Inclusive.')),
    to: Type.Optional(time('Exclusive; later than `from`. Default: now.')),
    format: Type.Optional(
      literals(['', ...USAGE_EXPORT_FORMATS], {
        description: 'Default csv.',
        ...messages({ '*': 'must be one of csv, json' }),
      }),
    ),
    group: Type.Optional(
      literals(['', ...USAGE_EXPORT_GROUPS], {
        description: 'Default call.',
        ...messages({ '*': 'must be one of call, key, model, day' }),
      }),
    ),
    key: Type.Optional(once()),
    model: Type.Optional(once()),
    status: Type.Optional(status),
  },
  unknownParameter,
);
