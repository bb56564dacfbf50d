import type { Knobs } from './types.js';

export const DEFAULT_KNOBS: Readonly<Knobs> = Object.freeze({
  loadDelayMs: 0,
  unloadDelayMs: 0,
  firstTokenDelayMs: 0,
  tokensPerSecond: 0,
  tokens: 8,
  failAfterChunks: null,
  failMode: 'end',
  headersDelayMs: 0,
  stallAfterChunks: null,
  stallMs: 0,
  errorShape: 'envelope',
  emptyBody502: false,
  apiKeys: null,
  legacyRoutes: false,
  eventsRoute: true,
  loadError: null,
  peerUnreachable: false,
  version: { version: 'v250-sim', commit: '0bdb3720', build_date: '2026-08-22T00:00:00Z' },
});

export function createKnobs(overrides: Partial<Knobs> = {}): Knobs {
  return { ...DEFAULT_KNOBS, version: { ...DEFAULT_KNOBS.version }, ...overrides };
}
