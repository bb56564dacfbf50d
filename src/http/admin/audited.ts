/**
 * Makes an admin handler an audited action: every call that reaches it leaves one entry in the
 * audit log, success or failure (with the error's code as the reason). The handler names the
 * target, and writes through `audit.commit` when its change lives in the store, so the change
 * and its entry commit together; otherwise the success entry is written after it answered.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditAction, AuditActor, AuditChanges, AuditTarget } from '../../admin-api/types.js';
import { actorOf } from '../../audit/actor.js';
import { isAuditWriteFailure, type AuditLog } from '../../audit/audit-log.js';
import { isGatewayError } from '../../core/errors.js';
import type { StoreTransaction } from '../../store/store.js';
import { invalidInputError } from '../route-schemas.js';

/** What an audited handler may say about its entry. */
export interface AuditScope {
  /** Starts as the route's action; a handler that learns more (a PATCH that revokes) changes it. */
  action: AuditAction;
  /** Starts as who authenticated the request; sign-in and setup name the session they open. */
  actor: AuditActor;
  target: AuditTarget | null;
  /** What the action changed, from → to (user actions); read when its success entry is written. */
  changes: AuditChanges | null;
  /** Runs a store write; it commits with this action's success entry or not at all. */
  commit<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T>;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
export type AuditedHandler = (request: FastifyRequest, reply: FastifyReply, audit: AuditScope) => Promise<unknown>;

export interface AuditedOptions {
  /** The action a failure is recorded as (`session.sign_in_failed`); default the route's. */
  failureAction?: AuditAction;
}

const auditedHandlers = new WeakSet<Handler>();

/**
 * Whether `handler` is an audited action. Its route is given `attachValidation`, so a request its
 * schema refuses still reaches the wrapper and leaves a failure entry (`validation_failed`).
 */
export function isAuditedHandler(handler: unknown): boolean {
  return typeof handler === 'function' && auditedHandlers.has(handler as Handler);
}

/** Wraps handlers of one app: `audited('key.create', handler)`. */
export type Audited = (action: AuditAction, handler: AuditedHandler, options?: AuditedOptions) => Handler;

export function createAudited(log: AuditLog, clientAddress: (request: FastifyRequest) => string): Audited {
  return (action, handler, options = {}) => {
    const wrapped: Handler = async (request, reply) => {
      let settled = false;
      const scope: AuditScope = {
        action,
        actor: actorOf(request.adminIdentity),
        target: null,
        changes: null,
        commit: async (work) => {
          const result = await log.commit(work, () => entry('success', null));
          settled = true;
          return result;
        },
      };
      const entry = (outcome: 'success' | 'failure', reason: string | null) => ({
        actor: scope.actor,
        client: clientAddress(request),
        action: outcome === 'failure' ? (options.failureAction ?? scope.action) : scope.action,
        target: scope.target,
        outcome,
        reason,
        changes: outcome === 'success' ? scope.changes : null,
      });
      let answer: unknown;
      try {
        if (request.validationError) throw invalidInputError(request.validationError, request);
        answer = await handler(request, reply, scope);
      } catch (error) {
        if (!settled && !isAuditWriteFailure(error))
          await log.record(entry('failure', isGatewayError(error) ? error.code : 'internal_error'));
        throw error;
      }
      if (!settled) await log.record(entry('success', null));
      return answer;
    };
    auditedHandlers.add(wrapped);
    return wrapped;
  };
}
