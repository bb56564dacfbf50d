/**
 * The two raw doors' chains, built before Fastify's router: `/v1` on the main listener and the
 * Ollama listener. Both share one body receiver, so the spool's caps count every body held.
 */
import type { Settings } from '../settings/index.js';
import { clientAuth, modelAllowList } from '../auth/client-auth-steps.js';
import { cachedCatalog, type ModelCatalog } from '../auth/model-access.js';
import { createProxyTrust, type ProxyTrust } from '../auth/proxy-trust.js';
import { GatewayError } from '../core/errors.js';
import type { TapFactory } from '../core/steps.js';
import type { ModelEntry } from '../management-client/types.js';
import { ollamaAuth } from '../ollama/door-auth.js';
import { ollamaCall } from '../ollama/door.js';
import { modelsListing } from '../proxy/models-list.js';
import { bodyReceiver, readModel, type BodyReceiver } from '../proxy/read-model.js';
import { queueAdmission, type ResolveModel } from '../queue/admission-step.js';
import { corsPolicy, withCors } from './cors.js';
import { createOllamaRoute } from './ollama-route.js';
import { createProxyRoute } from './proxy-route.js';
import type { RawHandler, RouteDeps } from './route-deps.js';

export interface ProxyChains {
  /** The `/v1/*` handler: cors → the client chain → forward. */
  v1: RawHandler;
  /** Every call on the Ollama listener; undefined while the door is off. */
  ollama: RawHandler | undefined;
  /** llama-swap's models with the active profile's pins, cached (the admin API reads it too). */
  catalog: () => Promise<ModelCatalog | undefined>;
  trust: ProxyTrust;
}

export function buildProxyChains(deps: RouteDeps): ProxyChains {
  const usage = deps.usage;
  const catalog = cachedCatalog(deps.listModels, deps.activeProfilePins);
  const trust = createProxyTrust(deps.settings.trustedProxies);
  // One receiver for both doors, so the spool's caps count every body the gateway holds.
  const receiveBody = bodyReceiver({
    bodyLimitBytes: deps.settings.bodyLimitBytes,
    bodyTimeoutMs: deps.settings.bodyTimeoutMs,
    spoolDir: deps.spoolDir,
    spoolLimits: { maxBytes: deps.settings.spoolMaxBytes, maxPerKey: deps.settings.spoolMaxPerKey },
  });
  const v1Chain = createProxyRoute({
    steps: [
      clientAuth(deps.keys, deps.now),
      usage.limitStep,
      readModel(receiveBody),
      ...(usage.captureStep ? [usage.captureStep] : []),
      usage.readHeadersStep,
      modelsListing(deps.listModels),
      modelAllowList(catalog),
      usage.reserveStep,
      usage.budgetStep,
      usage.headersStep,
      queueAdmission(deps.queue, modelResolver(deps.settings, catalog), deps.settings.sseKeepAliveMs),
    ],
    forwarder: deps.forwarder,
    logger: deps.logger,
    tap: bothTaps(usage.tap, deps.tap),
    onStart: deps.onProxyStart
      ? (ctx) => {
          usage.onStart(ctx);
          deps.onProxyStart!(ctx);
        }
      : usage.onStart,
    inFlight: deps.proxyInFlight,
    trust,
  });
  const v1 = withCors(corsPolicy(deps.settings.corsOrigins), v1Chain);
  return {
    v1,
    ollama: deps.settings.ollamaListen ? ollamaDoor(deps, catalog, trust, receiveBody) : undefined,
    catalog,
    trust,
  };
}

/**
 * The Ollama listener's chain: the `/v1` steps, with the door's key check (keyless calls act as
 * GATEHOUSE_OLLAMA_KEY) and `ollamaCall` (answers or translates) in place of readModel and
 * modelsListing. The queue sends no SSE keep-alive comments: NDJSON clients would choke on them.
 *
 *   ollama listener     ollamaAuth → keyLimits → ollamaCall → [captureRequestBody] → rateLimitHeaders (GET) →
 *                       modelAllowList → tokenReservation → budgetReservation → rateLimitHeaders →
 *                       admissionQueue (no keep-alive) → forward (translated) (+ usage tap)
 */
function ollamaDoor(
  deps: RouteDeps,
  catalog: () => Promise<ModelCatalog | undefined>,
  trust: ProxyTrust,
  receiveBody: BodyReceiver,
): RawHandler {
  const usage = deps.usage;
  const upstream = deps.admin?.llamaSwap;
  const unavailable = () =>
    Promise.reject(new GatewayError('service_unavailable', { message: "llama-swap's own API is not configured." }));
  const index = deps.admin?.index;
  const keyName = deps.settings.ollamaKey;
  return createOllamaRoute({
    steps: [
      ollamaAuth(
        deps.keys,
        keyName !== undefined && index ? { name: keyName, find: (n) => index.named(n) } : undefined,
        deps.now,
      ),
      usage.limitStep,
      ollamaCall({
        listModels: deps.listModels as () => Promise<ModelEntry[]>,
        models: {
          running: () => upstream?.running() ?? unavailable(),
          load: (model) => upstream?.load(model) ?? unavailable(),
          unload: (model) => upstream?.unload(model) ?? unavailable(),
        },
        catalog,
        receiveBody,
        logger: deps.logger,
      }),
      ...(usage.captureStep ? [usage.captureStep] : []),
      usage.readHeadersStep,
      modelAllowList(catalog),
      usage.reserveStep,
      usage.budgetStep,
      usage.headersStep,
      queueAdmission(deps.queue, modelResolver(deps.settings, catalog), 0),
    ],
    forwarder: deps.forwarder,
    logger: deps.logger,
    tap: bothTaps(usage.tap, deps.tap),
    onStart: usage.onStart,
    inFlight: deps.proxyInFlight,
    trust,
  });
}

/** One tap from two optional ones (the usage tap and an extra one from tests). */
function bothTaps(a: TapFactory | undefined, b: TapFactory | undefined): TapFactory | undefined {
  if (!a || !b) return a ?? b;
  return (ctx, status, contentType) => {
    const first = a(ctx, status, contentType);
    const second = b(ctx, status, contentType);
    if (!first || !second) return first ?? second;
    return {
      onChunk(chunk) {
        first.onChunk(chunk);
        second.onChunk(chunk);
      },
      onEnd(outcome) {
        first.onEnd(outcome);
        second.onEnd(outcome);
      },
    };
  };
}

/**
 * Aliases count as their model for the per-model cap and the loaded-model preference, so a
 * capped queue resolves names against llama-swap's list; without caps the name is enough.
 */
function modelResolver(
  settings: Pick<Settings, 'maxInflight' | 'maxInflightPerModel'>,
  catalog: () => Promise<ModelCatalog | undefined>,
): ResolveModel {
  if (settings.maxInflight === 0 && settings.maxInflightPerModel === 0) return (name) => name;
  return async (name) => (await catalog())?.resolve(name) ?? name;
}
