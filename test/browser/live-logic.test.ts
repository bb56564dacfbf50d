/** The live view's pure parts in the page: joining a history sent again, and what a log's status says. */
import { describe, expect, it } from 'vitest';
import type { LiveUpstream } from '../../src/admin-api/types.js';
import { appendBounded, joinHistory } from '../../web/src/lib/live-text.js';
import { gapMarker, liveLogStatus } from '../../web/src/lib/log-status.js';

const upstream = (state: LiveUpstream['state'], error: string | null = null): LiveUpstream => ({
  state,
  mode: 'events',
  reachable: state === 'live',
  url: 'http://127.0.0.1:8080',
  kind: 'llama-swap',
  version: null,
  error,
  logsUnavailable: null,
});

describe('joining a log history sent again', () => {
  it('adds only what follows the text already held', () => {
    expect(joinHistory('a\nb\n', 'a\nb\nc\n')).toBe('c\n');
    // llama-swap's history may have lost its start meanwhile: the held tail is what must match.
    const held = `${'x'.repeat(3000)}\ntail\n`;
    expect(joinHistory(held, `${'x'.repeat(2500)}\ntail\nnew\n`)).toBe('new\n');
  });

  it('adds nothing when nothing is new, and everything when nothing was held', () => {
    expect(joinHistory('a\nb\n', 'a\nb\n')).toBe('');
    expect(joinHistory('', 'a\n')).toBe('a\n');
  });

  it('cannot join a history that does not continue the held text (a restarted llama-swap)', () => {
    expect(joinHistory('old line\n', 'a new process\n')).toBeNull();
  });

  it('keeps at most the bound, cut at a line start', () => {
    expect(appendBounded('one\ntwo\n', 'three\n', 10)).toBe('three\n');
    expect(appendBounded('ab', 'cd', 10)).toBe('abcd');
  });
});

describe("a log view's status", () => {
  it('is Live only while the browser and llama-swap are both followed', () => {
    expect(liveLogStatus('live', upstream('live'), 'proxy')).toEqual({ status: 'live', reason: null });
    expect(liveLogStatus('reconnecting', upstream('live'), 'proxy').status).toBe('reconnecting');
    expect(liveLogStatus('paused', upstream('live'), 'upstream').status).toBe('paused');
  });

  it("says llama-swap's reason while it is reconnecting or unavailable", () => {
    const reason = 'llama-swap could not be reached: llama-swap events stream failed: ECONNREFUSED';
    expect(liveLogStatus('live', upstream('reconnecting', reason), 'proxy')).toEqual({
      status: 'reconnecting',
      reason,
    });
    expect(liveLogStatus('live', upstream('unavailable', reason), 'upstream')).toEqual({
      status: 'unavailable',
      reason,
    });
  });

  it("does not hold Gatehouse's own log to llama-swap's state", () => {
    expect(liveLogStatus('live', upstream('unavailable', 'ECONNREFUSED'), 'gateway')).toEqual({
      status: 'live',
      reason: null,
    });
  });

  it('marks a config reload calmly, once per gap', () => {
    expect(gapMarker('restart')).toBe('— llama-swap restarted the stream (config reload) —');
  });
});
