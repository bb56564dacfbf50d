/**
 * How Fastify uses the admin API's route schemas (`src/admin-api`): requests are validated with
 * validators compiled once per process and shared by every app (`core/schema-validator.ts`),
 * their compilation deferred to a route's first request; responses are written with
 * `JSON.stringify` as before, their schemas documenting them (`GET /api/openapi.json`) and never
 * dropping a field. A refused request answers in the admin error shape with one issue per bad
 * field, its `path` a JSON pointer, under the code the route declares (`config.invalidInput`).
 */
import type { FastifyError, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { GatewayError, type ErrorCode } from '../core/errors.js';
import {
  fieldIssues,
  inSchemaOrder,
  refinementIssues,
  validatorFor,
  type FieldIssue,
} from '../core/schema-validator.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The error code of a request its schemas refuse (default `validation_failed`, 422). */
    invalidInput?: ErrorCode;
    /** The message of such a refusal, from its field issues (default the catalogue's). */
    invalidInputMessage?: (issues: FieldIssue[]) => string;
    /** The order of such a refusal's issues, given the refused value (default the schema's). */
    invalidInputOrder?: (issues: FieldIssue[], value: unknown) => FieldIssue[];
  }
}

export const compileRequestValidator: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  let validate: ValidateFunction | undefined;
  return (data: unknown) => {
    validate ??= validatorFor(schema, httpPart === 'body' ? 'body' : 'text');
    const errors = validate(data) ? [] : [...(validate.errors ?? [])];
    // A refinement's issues join the schema's as errors of their own keyword, message included.
    for (const { path, message } of refinementIssues(schema, data))
      errors.push({ keyword: REFINEMENT, instancePath: path, schemaPath: '#', params: {}, message });
    return errors.length === 0 ? { value: data } : { error: errors as unknown as Error };
  };
};

const REFINEMENT = 'x-refinement';

export const compileResponseSerializer = () => (data: unknown) => JSON.stringify(data);

/** The catalogue error for a request Fastify's validation refused. */
export function invalidInputError(
  error: { validation?: FastifyError['validation']; validationContext?: string },
  request: FastifyRequest,
): GatewayError {
  const { invalidInput, invalidInputMessage, invalidInputOrder } = request.routeOptions.config;
  const part = error.validationContext;
  const issues = inSchemaOrder(fieldIssues(error.validation as ErrorObject[]), schemaOf(request, part));
  const details = invalidInputOrder ? invalidInputOrder(issues, refusedValue(part, request)) : issues;
  const message = invalidInputMessage?.(details);
  return new GatewayError(invalidInput ?? 'validation_failed', { details, ...(message ? { message } : {}) });
}

/** The route's schema of the refused part. */
function schemaOf(request: FastifyRequest, part: string | undefined): object | undefined {
  const schemas = request.routeOptions.schema as Record<string, object | undefined> | undefined;
  return part === undefined ? undefined : schemas?.[part];
}

/** The request part Fastify refused, whose field order the issues follow. */
function refusedValue(part: string | undefined, request: FastifyRequest): unknown {
  if (part === 'body') return request.body;
  if (part === 'querystring') return request.query;
  if (part === 'params') return request.params;
  return undefined;
}

/** `Invalid: name, email.`: the message of routes that name their refused fields. */
export function invalidFieldsMessage(issues: readonly FieldIssue[]): string {
  return `Invalid: ${issues.map((issue) => issue.path.slice(1) || 'body').join(', ')}.`;
}

/** `Invalid query: limit must be ...; action must be ....`: the message of refused query strings. */
export function invalidQueryMessage(issues: readonly FieldIssue[]): string {
  return `Invalid query: ${issues.map((issue) => `${issue.path.slice(1)} ${issue.message}`).join('; ')}.`;
}
