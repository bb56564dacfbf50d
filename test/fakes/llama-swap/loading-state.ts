/**
 * llama-swap's `sendLoadingState` (`internal/router/loading.go`, started in `router/base.go`):
 * a streaming `/v1/chat/completions` call to a model that is not ready gets `200` and SSE
 * headers at once, then chat chunks that carry only `choices[0].delta.reasoning_content`: a
 * rule, `llama-swap loading model: <id>` (each line cut into 5-character pieces, then a `\n`
 * piece), a `.` every 750 ms while the model loads, and when it is ready `\n`,
 * `Done! (<seconds>s)`, the rule and ` `. The real answer follows in the same body. If the load
 * fails, llama-swap's error body is written into the stream as is (the status is long sent).
 * The simulator sends the pieces without llama-swap's 75 characters per second pacing and
 * without the random remarks.
 */
import { performance } from 'node:perf_hooks';
import type { ServerResponse } from 'node:http';
import { goJson } from './responses.js';

const RULE = '━━━━━';
const TICK_MS = 750;
const PIECE_CHARS = 5;

export class LoadingState {
  private readonly startedAt = performance.now();
  private readonly ticker: NodeJS.Timeout;

  constructor(
    private readonly res: ServerResponse,
    modelId: string,
  ) {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    res.flushHeaders();
    this.line(RULE);
    this.line(`llama-swap loading model: ${modelId}`);
    this.ticker = setInterval(() => this.send('.'), TICK_MS);
  }

  /** The model is ready (or the wait ended): stop ticking, and close the text unless the client left. */
  finish(clientGone: boolean): void {
    clearInterval(this.ticker);
    if (clientGone) return;
    this.send('\n');
    this.line(`Done! (${((performance.now() - this.startedAt) / 1000).toFixed(2)}s)`);
    this.line(RULE);
    this.line(' ');
  }

  /** The load failed: llama-swap's error body goes into the open stream. */
  fail(body: string): void {
    clearInterval(this.ticker);
    if (this.res.writableEnded || this.res.destroyed) return;
    this.res.end(body);
  }

  private line(text: string): void {
    const chars = [...text];
    for (let i = 0; i < chars.length; i += PIECE_CHARS) this.send(chars.slice(i, i + PIECE_CHARS).join(''));
    this.send('\n');
  }

  private send(text: string): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    this.res.write(`data: ${goJson({ choices: [{ delta: { reasoning_content: text } }] })}\n\n`);
  }
}
