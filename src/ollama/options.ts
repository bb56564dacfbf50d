/**
 * Ollama's `options` → the OpenAI chat/completions fields llama-server reads (its extra sampling
 * fields `top_k`, `min_p`, `repeat_penalty` included). What cannot be passed on is reported to the
 * caller, which logs it; nothing else is sent.
 */

/** Options sent under the same name. */
const SAME_NAME = [
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'seed',
  'repeat_penalty',
  'presence_penalty',
  'frequency_penalty',
] as const;

export interface MappedOptions {
  fields: Record<string, unknown>;
  /** Option names that were dropped (`num_ctx`: the context is llama-swap's config). */
  ignored: string[];
}

export function mapOptions(options: unknown): MappedOptions {
  const fields: Record<string, unknown> = {};
  const ignored: string[] = [];
  if (options === undefined || options === null) return { fields, ignored };
  if (typeof options !== 'object' || Array.isArray(options)) throw new TypeError('"options" must be an object');
  for (const [name, value] of Object.entries(options as Record<string, unknown>)) {
    if (value === undefined || value === null) continue;
    if ((SAME_NAME as readonly string[]).includes(name)) {
      if (typeof value !== 'number') throw new TypeError(`"options.${name}" must be a number`);
      fields[name] = value;
    } else if (name === 'stop') {
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
        throw new TypeError('"options.stop" must be an array of strings');
      if (value.length > 0) fields.stop = value;
    } else if (name === 'num_predict') {
      if (typeof value !== 'number' || !Number.isInteger(value))
        throw new TypeError('"options.num_predict" must be an integer');
      // -1 (no limit) and -2 (fill the context) leave the limit to the model server.
      if (value >= 0) fields.max_tokens = value;
    } else {
      ignored.push(name);
    }
  }
  return { fields, ignored };
}
