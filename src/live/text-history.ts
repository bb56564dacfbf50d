/**
 * The recent text of one llama-swap log, bounded, that can take llama-swap's history again after
 * a reconnect: llama-swap sends a log's whole buffered history on every new stream, so the part
 * already held is recognised by its tail and only what is new is passed on.
 */

/** Characters of the held tail that must reappear in a new history to join the two. */
const JOIN_PROBE_CHARS = 2048;

export type Rejoin = { joined: true; added: string } | { joined: false };

export class TextHistory {
  #text = '';

  constructor(private readonly maxChars = 256 * 1024) {}

  text(): string {
    return this.#text;
  }

  append(chunk: string): void {
    if (chunk === '') return;
    this.#text += chunk;
    if (this.#text.length > this.maxChars) this.#text = trimToLine(this.#text, this.#text.length - this.maxChars);
  }

  /**
   * Takes a full history sent after a reconnect. When it continues what is held (the held tail is
   * found in it), only the text after that tail is added and returned; otherwise (llama-swap was
   * restarted, or more than its buffer was written meanwhile) the held text is replaced.
   */
  rejoin(history: string): Rejoin {
    const held = this.#text;
    if (held === '') {
      this.append(history);
      return { joined: true, added: history };
    }
    const probe = held.slice(-JOIN_PROBE_CHARS);
    const at = history.lastIndexOf(probe);
    if (at < 0) {
      this.#text = '';
      this.append(history);
      return { joined: false };
    }
    const added = history.slice(at + probe.length);
    this.append(added);
    return { joined: true, added };
  }
}

/** Drops at least `cut` leading characters, up to the next line start, so no half line is kept. */
function trimToLine(text: string, cut: number): string {
  const newline = text.indexOf('\n', cut);
  return newline < 0 ? text.slice(cut) : text.slice(newline + 1);
}
