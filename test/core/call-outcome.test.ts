/** The rules of a call's outcome: what status and error class the log and usage record get. */
import { describe, expect, it } from 'vitest';
import { CallOutcome } from '../../src/core/context.js';

describe('CallOutcome', () => {
  it('reports 499 for a client that left before any status was sent', () => {
    const outcome = new CallOutcome(performance.now());
    outcome.closed(false);
    expect(outcome).toMatchObject({ status: 499, clientAborted: true, errorClass: 'client_abort' });
  });

  it('keeps the status that was sent when the client leaves afterwards', () => {
    const outcome = new CallOutcome(performance.now());
    outcome.answer(200);
    outcome.headersSent(true);
    outcome.closed(false);
    expect(outcome).toMatchObject({ status: 200, streamed: true, clientAborted: true, errorClass: 'client_abort' });
  });

  it('is no abort when the response closed finished', () => {
    const outcome = new CallOutcome(performance.now());
    outcome.answer(204);
    outcome.closed(true);
    expect(outcome).toMatchObject({ status: 204, clientAborted: false, errorClass: undefined });
  });

  it('keeps the first error class: what followed is a consequence', () => {
    const outcome = new CallOutcome(performance.now());
    outcome.fail('upstream_status');
    outcome.fail('upstream_stream_failed');
    outcome.closed(false);
    expect(outcome.errorClass).toBe('upstream_status');
  });

  it('adds up the body bytes sent and times the first byte from the call start', () => {
    const outcome = new CallOutcome(performance.now() - 50);
    outcome.sent(10);
    outcome.sent(5);
    outcome.headersSent();
    expect(outcome.bytesOut).toBe(15);
    expect(outcome.firstByteMs).toBeGreaterThanOrEqual(50);
  });
});
