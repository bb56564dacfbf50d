/**
 * A log's recent text in the page: bounded by characters (cut at a line start), and joined to a
 * history sent again on a new connection, so lines already shown are not shown twice.
 */
const LIVE_TEXT_MAX_CHARS = 512 * 1024;

/** Characters of the held tail that must reappear in a new history to join the two. */
const JOIN_PROBE_CHARS = 2048;

export function appendBounded(held: string, text: string, max = LIVE_TEXT_MAX_CHARS): string {
  const next = held + text;
  if (next.length <= max) return next;
  const cut = next.length - max;
  const newline = next.indexOf('\n', cut);
  return newline < 0 ? next.slice(cut) : next.slice(newline + 1);
}

/**
 * What `history` adds to `held` when it continues it (the held tail is found in it), or null
 * when it does not (Gatehouse or llama-swap started over): then it replaces what is held.
 */
export function joinHistory(held: string, history: string): string | null {
  if (held === '') return history;
  const probe = held.slice(-JOIN_PROBE_CHARS);
  const at = history.lastIndexOf(probe);
  return at < 0 ? null : history.slice(at + probe.length);
}
