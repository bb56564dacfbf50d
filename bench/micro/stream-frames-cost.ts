/**
 * What reading a streamed answer costs on the side of the pass-through: the usage tap's token
 * counting and the end-of-stream check, fed every chunk of a llama-server stream (one frame per
 * chunk, content deltas, the last frame with `timings`, then `[DONE]`) through the stream's one
 * SSE parser, as the forwarder runs them. Prints CPU time per stream and per frame.
 * Run: `node --import tsx bench/micro/stream-frames-cost.ts` (bounded: 3 rounds of 2,000 streams).
 */
import type { ProxyContext } from '../../src/core/context.js';
import { watchStreamEnd } from '../../src/proxy/stream-end.js';
import { streamFrames } from '../../src/proxy/stream-frames.js';
import { createUsageTap } from '../../src/usage/usage-tap.js';

const FRAMES = 200;
const STREAMS = 2_000;
const ROUNDS = 3;

const chunks: Buffer[] = [];
for (let i = 0; i < FRAMES; i++) {
  const delta = { choices: [{ index: 0, delta: { content: ` word${i}` } }], object: 'chat.completion.chunk' };
  chunks.push(Buffer.from(`data: ${JSON.stringify(delta)}\n\n`));
}
const timings = { prompt_n: 12, cache_n: 30, predicted_n: FRAMES, prompt_ms: 20.5, predicted_ms: 900.25 };
chunks.push(
  Buffer.from(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], timings })}\n\n`),
);
chunks.push(Buffer.from('data: [DONE]\n\n'));

const tapFactory = createUsageTap({ captureBytes: 0 });

function oneStream(): number {
  const ctx = { request: { startedAt: performance.now() }, outcome: { usage: undefined } } as unknown as ProxyContext;
  const tap = tapFactory(ctx, 200, 'text/event-stream')!;
  const end = watchStreamEnd('/v1/chat/completions')!;
  const frames = streamFrames(tap, end)!;
  for (const chunk of chunks) {
    tap.onChunk(chunk);
    frames.push(chunk);
  }
  if (!end.endedWithTerminalFrame(frames)) throw new Error('the stream was taken for cut');
  return ctx.outcome.usage!.tokens()!.output ?? 0;
}

for (let i = 0; i < 500; i++) oneStream(); // warm-up
for (let round = 1; round <= ROUNDS; round++) {
  const before = process.cpuUsage();
  let output = 0;
  for (let i = 0; i < STREAMS; i++) output += oneStream();
  const used = process.cpuUsage(before);
  const us = (used.user + used.system) / STREAMS;
  if (output !== STREAMS * FRAMES) throw new Error(`counted ${output} tokens`);
  console.log(
    `round ${round}: ${us.toFixed(1)} µs CPU per stream of ${chunks.length} frames, ` +
      `${((us * 1000) / chunks.length).toFixed(0)} ns per frame`,
  );
}
