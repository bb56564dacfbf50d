/**
 * `GET /v1/models` answered by the gateway when it must change the list: a key restricted to
 * some models (its list, its owner's allowance) sees only those, and a caller sending
 * `anthropic-version` (Anthropic SDKs, Claude Code discovery) gets Anthropic's list shape.
 * Everyone else gets llama-swap's answer passed through untouched.
 */
import { GatewayError } from '../core/errors.js';
import type { ProxyStep } from '../core/steps.js';
import type { ProxyContext } from '../core/context.js';
import { answerJson } from './answer-json.js';
import { allowanceCovers, allowanceRestricts, catalogFromList } from '../auth/model-access.js';

export interface ListedModel {
  id: string;
  created?: number;
  name?: string;
  [field: string]: unknown;
}

/** What the step needs from the llama-swap client. Errors carry `kind` and `status`. */
export type ListModels = () => Promise<ListedModel[]>;

export function modelsListing(listModels: ListModels): ProxyStep {
  // Not async itself: every other call passes straight through, without a promise.
  return function modelsListingStep(ctx) {
    if (ctx.request.method !== 'GET' || (ctx.request.path !== '/v1/models' && ctx.request.path !== '/v1/models/'))
      return;
    const caller = ctx.decided.caller;
    const restricted = caller !== undefined && allowanceRestricts(caller.models);
    const anthropic = ctx.request.format === 'anthropic'; // the call carries anthropic-version (wire-format.ts)
    if (!restricted && !anthropic) return; // pass through, byte for byte
    return answerModelList(ctx, listModels, restricted, anthropic);
  };
}

async function answerModelList(
  ctx: ProxyContext,
  listModels: ListModels,
  restricted: boolean,
  anthropic: boolean,
): Promise<'handled'> {
  let models: ListedModel[];
  try {
    models = await listModels();
  } catch (error) {
    throw upstreamListError(error);
  }
  if (restricted) {
    // Exactly what the key may call: resolved against this very list (aliases, patterns).
    const allowed = ctx.decided.caller!.models;
    const known = catalogFromList(models);
    models = models.filter((m) => allowanceCovers(allowed, m.id, known));
  }
  return answerJson(ctx, anthropic ? anthropicList(models) : { object: 'list', data: models });
}

/** Anthropic's `GET /v1/models` shape (what its SDKs and Claude Code parse). */
function anthropicList(models: ListedModel[]) {
  const data = models.map((m) => ({
    type: 'model',
    id: m.id,
    display_name: typeof m.name === 'string' && m.name !== '' ? m.name : m.id,
    created_at: new Date((typeof m.created === 'number' ? m.created : 0) * 1000).toISOString(),
  }));
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

function upstreamListError(error: unknown): GatewayError {
  const { kind, status, message, code } = error as { kind?: string; status?: number; message?: string; code?: string };
  if (kind === 'timeout')
    return new GatewayError('upstream_timeout', {
      message: 'llama-swap did not list its models in time.',
      cause: error,
    });
  if (kind === 'http' && typeof status === 'number')
    return new GatewayError('upstream_error', {
      status,
      message: message ?? `llama-swap answered ${status}.`,
      upstreamCode: code,
      cause: error,
    });
  return new GatewayError('upstream_unreachable', {
    message: 'llama-swap could not be reached to list models.',
    cause: error,
  });
}
