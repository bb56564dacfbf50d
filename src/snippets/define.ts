import { keyNote } from './keys.js';
import type { Snippet, SnippetContext } from './types.js';

export interface SnippetDefinition<Id extends string> extends Omit<Snippet<Id>, 'note'> {
  /** Where the key goes, for the note: "the x-api-key header", "ANTHROPIC_AUTH_TOKEN". */
  keyField: string;
  /** Replaces the standard key note (for snippets that never carry the key themselves). */
  note?: (ctx: SnippetContext) => string | undefined;
  /** A second line for the note, e.g. about a model the page could not fill in. */
  extraNote?: (ctx: SnippetContext) => string | undefined;
}

/** Builds a snippet whose `id` keeps its literal type, so tests can require one entry per id. */
export function defineSnippet<const Id extends string>(def: SnippetDefinition<Id>): Snippet<Id> {
  const { keyField, note, extraNote, ...snippet } = def;
  const keyLine =
    note ?? ((ctx: SnippetContext) => keyNote(ctx.key, { client: def.client, keyField, keyRequired: def.keyRequired }));
  return {
    ...snippet,
    note(ctx) {
      const lines = [keyLine(ctx), extraNote?.(ctx)].filter((l): l is string => l !== undefined);
      return lines.length === 0 ? undefined : lines.join(' ');
    },
  };
}
