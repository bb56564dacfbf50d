/**
 * Schemas several admin routes share: the error body, timestamps, budgets. Each schema is the
 * one statement of its shape: Fastify validates requests with it, `types.ts` derives the types
 * the handlers and the dashboard use, and `GET /api/openapi.json` documents it.
 */
import { Type, type TSchema } from 'typebox';

/** The failing keyword's message (`*`: any keyword) shown in a refused request's `details`. */
export function messages(byKeyword: Record<string, string>): { 'x-messages': Record<string, string> } {
  return { 'x-messages': byKeyword };
}

/** A value or `null`, with one message for anything else. */
export function nullable<T extends TSchema>(schema: T, message: string) {
  return Type.Union([schema, Type.Null()], messages({ anyOf: message }));
}

/** The ISO 8601 forms `parseIsoTimestamp` reads; whether the date exists is checked there. */
export const ISO_8601 =
  '^\\s*\\d{4}-\\d{2}-\\d{2}' + '(?:[Tt ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,9})?)?(?:[Zz]|[+-]\\d{2}:?\\d{2}))?\\s*$';

export const Iso = Type.String({ format: 'date-time', description: 'ISO 8601, UTC' });

/** The admin error shape: `details` holds field issues (`path` is a JSON pointer) or a route's own data. */
export const ErrorBody = Type.Object({
  error: Type.Object({
    code: Type.String({ description: 'A stable code from the error catalogue (docs/admin-api.md).' }),
    message: Type.String(),
    details: Type.Optional(
      Type.Unknown({
        description:
          'For refused input: `[{ "path": JSON pointer of the bad field, "message" }]`; other errors carry their own.',
      }),
    ),
  }),
});

export const BudgetPeriod = Type.Union([Type.Literal('day'), Type.Literal('week'), Type.Literal('month')]);

/** Budgets are per month at most: a trillion tokens is beyond any one GPU box. */
const BUDGET_MAX = 1_000_000_000_000;

const budgetAmount = nullable(
  Type.Integer({ minimum: 1, maximum: BUDGET_MAX }),
  `must be a whole number from 1 to ${BUDGET_MAX}, or null for no budget`,
);

/** A key's budget per calendar period (`GATEHOUSE_TIMEZONE`); null: no budget of that kind. */
export const KeyBudget = Type.Object({
  tokens: Type.Union([Type.Integer(), Type.Null()]),
  requests: Type.Union([Type.Integer(), Type.Null()]),
  gpuSeconds: Type.Union([Type.Integer(), Type.Null()]),
  period: BudgetPeriod,
});

/** A budget in a request: `null` clears every amount; an object names the amounts and period it changes. */
export const BudgetInput = nullable(
  Type.Object(
    {
      tokens: Type.Optional(budgetAmount),
      requests: Type.Optional(budgetAmount),
      gpuSeconds: Type.Optional(budgetAmount),
      period: Type.Optional(
        Type.Union(
          [Type.Literal('day'), Type.Literal('week'), Type.Literal('month')],
          messages({ anyOf: 'must be one of day, week, month' }),
        ),
      ),
    },
    { additionalProperties: false },
  ),
  'must be an object like {"tokens": 200000, "requests": null, "gpuSeconds": null, "period": "day"}, or null',
);
