import { describe, expect, it } from 'vitest';
import { StreamEndWatcher, watchStreamEnd } from '../../src/proxy/stream-end.js';
import { streamFrames } from '../../src/proxy/stream-frames.js';

const DELTA = 'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n';
const RESPONSES_DONE =
  `event: response.completed\ndata: ` +
  `{"type":"response.completed","response":{"output_text":"${'x'.repeat(300)}"}}\n\n`;

/** The watcher's verdict on `text` fed in the given pieces, through the stream's parser as the forwarder runs it. */
function verdict(pieces: string[]): { whole: boolean; separator: string } {
  const watcher = new StreamEndWatcher();
  const frames = streamFrames(undefined, watcher)!;
  for (const piece of pieces) frames.push(Buffer.from(piece, 'utf8'));
  return { whole: watcher.endedWithTerminalFrame(frames), separator: frames.closingBreaks() };
}

/** The same verdict for every way of cutting `text` into two pieces, and byte by byte. */
function verdictsForEverySplit(text: string): Set<boolean> {
  const seen = new Set<boolean>();
  for (let i = 0; i <= text.length; i++) seen.add(verdict([text.slice(0, i), text.slice(i)]).whole);
  seen.add(verdict([...text]).whole);
  return seen;
}

describe('stream end watcher', () => {
  const whole: Array<[string, string]> = [
    ['an OpenAI stream ending with [DONE]', DELTA + DELTA + 'data: [DONE]\n\n'],
    ['[DONE] without the space after the colon', DELTA + 'data:[DONE]\n\n'],
    ['[DONE] with CRLF line endings', DELTA.replace(/\n/g, '\r\n') + 'data: [DONE]\r\n\r\n'],
    ['[DONE] with CR line endings', DELTA.replace(/\n/g, '\r') + 'data: [DONE]\r\r'],
    ['[DONE] followed by a keep-alive comment', DELTA + 'data: [DONE]\n\n: ping\n\n'],
    [
      'an Anthropic stream ending with message_stop',
      'event: content_block_delta\ndata: {"type":"content_block_delta"}\n\nevent: message_stop\ndata: ' +
        '{"type":"message_stop"}\n\n',
    ],
    [
      'a Responses stream ending with a long response.completed',
      'event: response.output_text.delta\ndata: {"delta":"x"}\n\n' + RESPONSES_DONE,
    ],
    ['a Responses stream ending with response.incomplete', 'event: response.incomplete\ndata: {}\n\n'],
    [
      "a stream ending with the upstream's own error frame",
      DELTA + 'data: {"error":{"code":500,"message":"boom"}}\n\n',
    ],
    ['an Anthropic stream ending with an error event', 'event: error\ndata: {"type":"error"}\n\n'],
  ];
  for (const [name, text] of whole) {
    it(`counts ${name} as whole, however it is split`, () => {
      expect(verdictsForEverySplit(text)).toEqual(new Set([true]));
    });
  }

  const cut: Array<[string, string]> = [
    ['an OpenAI stream without [DONE]', DELTA + DELTA],
    ['[DONE] whose frame was never ended by a blank line', DELTA + 'data: [DONE]\n'],
    ['a stream cut in the middle of a frame', DELTA + 'data: {"choices":[{"del'],
    [
      'an Anthropic stream without message_stop',
      'event: message_start\ndata: {}\n\nevent: message_delta\ndata: {}\n\n',
    ],
    ['a Responses stream cut inside response.completed', RESPONSES_DONE.slice(0, 120)],
    ['a Responses stream without a final event', 'event: response.output_text.delta\ndata: {"delta":"x"}\n\n'],
    ['[DONE] as text inside a JSON string', 'data: {"choices":[{"delta":{"content":"data: [DONE]"}}]}\n\n'],
    ['nothing at all', ''],
  ];
  for (const [name, text] of cut) {
    it(`counts ${name} as truncated, however it is split`, () => {
      expect(verdictsForEverySplit(text)).toEqual(new Set([false]));
    });
  }

  it('separates an appended event from what came before with the line breaks missing', () => {
    expect(verdict([DELTA]).separator).toBe('');
    expect(verdict([DELTA + 'data: {"a"']).separator).toBe('\n\n');
    expect(verdict([DELTA + 'data: {}\n']).separator).toBe('\n');
    expect(verdict([]).separator).toBe('');
  });

  it('watches only the paths whose streams have a known terminal frame', () => {
    for (const path of ['/v1/chat/completions', '/v1/completions', '/v1/messages', '/v1/responses'])
      expect(watchStreamEnd(path)).toBeDefined();
    for (const path of ['/v1/audio/speech', '/v1/models', '/v1/chat/completions/x'])
      expect(watchStreamEnd(path)).toBeUndefined();
  });
});
