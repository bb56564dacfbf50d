/** Strict UTF-8: the text of valid bytes, `undefined` for anything else (no replacement characters). */
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}
