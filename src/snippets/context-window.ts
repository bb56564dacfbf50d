/**
 * The context window a client is told about (OpenCode's limit.context, Zed's max_tokens): the
 * size llama-swap's config declares for the model, else a default the snippet's note owns up to.
 */
import type { SnippetContext } from './types.js';

/**
 * When nothing is declared: big enough for coding agents, small enough that most local servers
 * hold it. Too big is the worse mistake: a client then sends prompts the server refuses.
 */
export const DEFAULT_CONTEXT_TOKENS = 32768;
const MAX_OUTPUT_TOKENS = 8192;

export interface ContextWindow {
  context: number;
  /** The output limit: a quarter of the window at most, so a reply never crowds out its prompt. */
  output: number;
}

export function contextWindow(ctx: SnippetContext): ContextWindow {
  const context = ctx.contextLength ?? DEFAULT_CONTEXT_TOKENS;
  return { context, output: Math.min(MAX_OUTPUT_TOKENS, Math.floor(context / 4)) };
}

/** The note line when the window is the default; undefined when llama-swap declared it. */
export function defaultContextNote(ctx: SnippetContext, field: string): string | undefined {
  if (ctx.contextLength !== undefined) return undefined;
  return (
    `llama-swap declares no context size for ${ctx.model}, so ${field} is ${DEFAULT_CONTEXT_TOKENS}: set it ` +
    "to the size the model server runs with (llama-server -c), or declare capabilities.context in llama-swap's config."
  );
}
