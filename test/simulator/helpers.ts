/** Small HTTP/SSE helpers shared by the simulator and upstream-client tests. */

/** A response body as loosely typed JSON: tests assert on its shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export async function json(res: Response): Promise<Json> {
  return res.json() as Promise<Json>;
}

export function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

export interface SseFrame {
  event: string | undefined;
  data: string;
}

/** Split a complete SSE body into frames (blank-line separated). */
export function parseSse(text: string): SseFrame[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      let event: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      return { event, data: data.join('\n') };
    });
}

/** Incremental reader over a streaming fetch body: read until the text satisfies `until`. */
export class BodyReader {
  text = '';
  done = false;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();

  constructor(res: Response) {
    if (!res.body) throw new Error('response has no body');
    this.reader = res.body.getReader();
  }

  async until(pred: (text: string) => boolean, timeoutMs = 2000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (!pred(this.text)) {
      if (this.done) throw new Error(`stream ended before condition; got ${JSON.stringify(this.text)}`);
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(this.text)}`);
      await this.readOnce(deadline - Date.now());
    }
    return this.text;
  }

  /** Read to the end; resolves with the text, rejects if the connection breaks. */
  async rest(timeoutMs = 2000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (!this.done) {
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(this.text)}`);
      await this.readOnce(deadline - Date.now());
    }
    return this.text;
  }

  private async readOnce(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`read timed out; got ${JSON.stringify(this.text)}`)),
        Math.max(1, timeoutMs),
      );
    });
    try {
      const { done, value } = await Promise.race([this.reader.read(), timeout]);
      if (done) this.done = true;
      else this.text += this.decoder.decode(value, { stream: true });
    } finally {
      clearTimeout(timer);
    }
  }

  cancel(): Promise<void> {
    return this.reader.cancel();
  }
}

/**
 * Whether a timer of `ms`, started now, fires before `work` settles. Timers fire in the order they
 * expire, so against a delay of at least `ms` that starts later this is an order, not a race.
 */
export async function timerFiresFirst(ms: number, work: Promise<unknown>): Promise<boolean> {
  const order: string[] = [];
  const timer = new Promise<void>((resolve) =>
    setTimeout(() => {
      order.push('timer');
      resolve();
    }, ms),
  );
  await Promise.all([timer, work.finally(() => order.push('work'))]);
  return order[0] === 'timer';
}

export function chatBody(model: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model, messages: [{ role: 'user', content: 'Say hello to the gateway' }], ...extra };
}
