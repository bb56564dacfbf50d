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
import { fieldIssues, validatorFor } from '../core/schema-validator.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The error code of a request its schemas refuse (default `validation_failed`, 422). */
    invalidInput?: ErrorCode;
  }
}

export const compileRequestValidator: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  let validate: ValidateFunction | undefined;
  return (data: unknown) => {
    validate ??= validatorFor(schema, httpPart === 'body' ? 'body' : 'text');
    return validate(data) ? { value: data } : { error: validate.errors as unknown as Error };
  };
};

export const compileResponseSerializer = () => (data: unknown) => JSON.stringify(data);

/** The catalogue error for a request Fastify's validation refused. */
export function invalidInputError(error: FastifyError, request: FastifyRequest): GatewayError {
  const code = request.routeOptions.config.invalidInput ?? 'validation_failed';
  return new GatewayError(code, { details: fieldIssues(error.validation as ErrorObject[]) });
}
