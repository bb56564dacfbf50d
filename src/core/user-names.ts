/**
 * What makes two user names the same name, and which characters a name may not hold. One rule
 * for the store (its unique comparison key), the admin API and OpenID Connect sign-in, so a
 * look-alike (`admin\u200b`, fullwidth `ａｄｍｉｎ`, `ADMIN`) is the name it looks like.
 */

/**
 * Characters nobody sees or that change how text around them reads: controls, format characters
 * (zero-width, direction marks and overrides), line and paragraph separators, surrogates, private
 * use, unassigned code points, default-ignorables (fillers, variation selectors), the blank
 * Braille pattern, and any space but U+0020.
 */
const INVISIBLE_SOURCE =
  String.raw`[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}` + String.raw`\p{Default_Ignorable_Code_Point}\u2800]|(?! )\s`;
const INVISIBLE = new RegExp(INVISIBLE_SOURCE, 'u');
const EVERY_INVISIBLE = new RegExp(INVISIBLE_SOURCE, 'gu');

/** The form a name is stored in: NFKC (fullwidth and other compatibility forms folded), trimmed. */
export function normalizeUserName(name: string): string {
  return name.normalize('NFKC').trim();
}

/** Whether the name (in NFKC, untrimmed: a leading BOM or tab counts) holds a character `INVISIBLE` lists. */
export function hasInvisibleCharacters(name: string): boolean {
  return INVISIBLE.test(name.normalize('NFKC'));
}

/** The name as it shows: NFKC, spaces of any kind as U+0020 (runs as one), other invisible characters dropped. */
export function visibleUserName(name: string): string {
  const visible = name.normalize('NFKC').replace(EVERY_INVISIBLE, (c) => (/\s/u.test(c) ? ' ' : ''));
  return visible.normalize('NFKC').replace(/ {2,}/g, ' ').trim();
}

/**
 * The comparison key: names with equal keys are one name (taken at creation, the same account at
 * sign-in). The visible name with its case folded. Stored in `users.name_key`: a change here
 * needs a migration that recomputes it.
 */
export function userNameKey(name: string): string {
  // Upper then lower case folds more than lower case alone (ß → ss, ς → σ).
  return visibleUserName(name).toUpperCase().toLowerCase().normalize('NFKC');
}
