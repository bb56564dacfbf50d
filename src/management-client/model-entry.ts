/**
 * Reading a model catalogue entry whichever upstream sent it: llama-swap puts a model's aliases
 * in `meta.llamaswap.aliases`, llama-server's router in a top-level `aliases` array.
 */
export function entryAliases(entry: { meta?: unknown; aliases?: unknown }): string[] {
  const meta = entry.meta as { llamaswap?: { aliases?: unknown } } | undefined;
  const list = meta?.llamaswap?.aliases ?? entry.aliases;
  return Array.isArray(list) ? list.filter((a): a is string => typeof a === 'string').map((a) => a.trim()) : [];
}
