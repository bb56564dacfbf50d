/**
 * Quoting for the languages snippets are written in. Values come from the dashboard (model ids,
 * keys, origins); a model id with a quote or `$` must not break the text a user pastes.
 */

/** A bash double-quoted string. */
export function shDouble(value: string): string {
  return `"${value.replace(/[\\"$`]/g, '\\$&')}"`;
}

/** A bash word: bare when it is plainly safe, double-quoted otherwise. Non-ASCII is never special to bash. */
export function shWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,\u00A1-\u2027\u202A-\uFEFE-]+$/.test(value) ? value : shDouble(value);
}

/** Text to place between bash single quotes (used for curl's JSON bodies). */
export function shSingleBody(value: string): string {
  return value.replace(/'/g, `'\\''`);
}

/**
 * A string literal valid in JSON, JavaScript, Python and TOML basic strings: JSON escapes are a
 * subset of what those accept, and `JSON.stringify` never emits `\/`, which TOML lacks.
 */
export function str(value: string): string {
  return JSON.stringify(value);
}

const YAML_RESERVED = /^(?:true|false|yes|no|on|off|y|n|null|~)$/i;

/** A YAML scalar: plain when unambiguous, a JSON (= YAML double-quoted) string otherwise. */
export function yamlScalar(value: string): string {
  const plain =
    /^[A-Za-z][A-Za-z0-9_./:@+ \u00A1-\u2027\u202A-\uFEFE-]*$/.test(value) &&
    !/[: ]$/.test(value) &&
    !value.includes(': ') &&
    !YAML_RESERVED.test(value);
  return plain ? value : JSON.stringify(value);
}

/** Joins lines, dropping the ones a context leaves out (`undefined` or `false`). */
export function lines(...parts: Array<string | undefined | false>): string {
  return parts.filter((p): p is string => typeof p === 'string').join('\n');
}
