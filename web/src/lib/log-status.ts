/**
 * What a log view's status says, from the browser's link to Gatehouse and Gatehouse's link to
 * llama-swap: Live only while both hold; otherwise which one is down, and why.
 */
import type { LiveUpstream, LogSource } from '@gatehouse/admin-api/types.js';
import type { LinkStatus } from './live-link.js';

export type LogStatus = 'connecting' | 'live' | 'reconnecting' | 'unavailable' | 'paused' | 'stopped';

export interface LogStatusText {
  status: LogStatus;
  /** Why it is not live, when known (e.g. llama-swap's `ECONNREFUSED`). */
  reason: string | null;
}

export function liveLogStatus(link: LinkStatus, upstream: LiveUpstream | null, source: LogSource): LogStatusText {
  if (link === 'connecting') return { status: 'connecting', reason: null };
  if (link === 'reconnecting') return { status: 'reconnecting', reason: 'Gatehouse is not answering.' };
  if (link === 'paused') return { status: 'paused', reason: 'No dashboard tab is visible.' };
  if (source === 'gateway') return { status: 'live', reason: null };
  // llama-server has no log stream: the page says so instead of retrying.
  if (upstream?.logsUnavailable) return { status: 'unavailable', reason: upstream.logsUnavailable };
  if (upstream === null || upstream.state === 'connecting') return { status: 'connecting', reason: null };
  if (upstream.state === 'live') return { status: 'live', reason: null };
  return { status: upstream.state, reason: upstream.error };
}

/** The marker a gap leaves in the log, once per gap. */
export function gapMarker(kind: 'restart' | 'lost' | 'back'): string {
  if (kind === 'restart') return '— llama-swap restarted the stream (config reload) —';
  if (kind === 'lost') return '— lost llama-swap; reconnecting —';
  return '— llama-swap is back —';
}
