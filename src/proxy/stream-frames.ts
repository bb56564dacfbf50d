/**
 * One SSE parser per streamed answer, feeding every reader of its frames: the usage tap
 * (token counts) and the end-of-stream check. The forwarder pushes each chunk into it once.
 */
import { SseParser } from '../core/sse-decoder.js';
import type { ResponseTap } from '../core/steps.js';
import type { StreamEndWatcher } from './stream-end.js';

/** A streamed frame with a longer line carries no counts and ends no stream: skipped, never buffered. */
const MAX_FRAME_LINE = 1024 * 1024;

/** The parser for a stream read by `tap` and/or `end`; undefined when neither reads frames. */
export function streamFrames(tap: ResponseTap | undefined, end: StreamEndWatcher | undefined): SseParser | undefined {
  const tapFrame = tap?.onFrame?.bind(tap);
  if (!end && !tapFrame) return undefined;
  const onFrame =
    end && tapFrame
      ? (event: string, bytes: Buffer, start: number, stop: number) => {
          tapFrame(event, bytes, start, stop);
          end.onFrame(event, bytes, start, stop);
        }
      : (tapFrame ?? end!.onFrame);
  return new SseParser(onFrame, { maxLineBytes: MAX_FRAME_LINE, onOversized: end?.onOversized });
}
