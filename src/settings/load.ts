/**
 * The one reader of `process.env`: `loadSettings` reads every setting of the table from the
 * environment and CLI flags, validates them all and returns a frozen object.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { SETTINGS } from './table.js';
import { SettingsError, type Settings } from './types.js';

export const FILE_INDIRECTIONS: Readonly<Record<string, string>> = {
  GATEHOUSE_ADMIN_PASSWORD: 'GATEHOUSE_ADMIN_PASSWORD_FILE',
  GATEHOUSE_DATABASE_URL: 'GATEHOUSE_DATABASE_URL_FILE',
  GATEHOUSE_REDIS_URL: 'GATEHOUSE_REDIS_URL_FILE',
  GATEHOUSE_OIDC_CLIENT_SECRET: 'GATEHOUSE_OIDC_CLIENT_SECRET_FILE',
};

export type FlagValues = Partial<Record<string, string>>;

/**
 * Builds settings from the environment and CLI flags (flags win). Throws `SettingsError`
 * listing every invalid value at once, so an operator fixes them in one go.
 */
export function loadSettings(
  env: NodeJS.ProcessEnv = process.env,
  flags: FlagValues = {},
  cwd = process.cwd(),
): Readonly<Settings> {
  const out: Partial<Record<keyof Settings, unknown>> = {};
  const problems: string[] = [];
  for (const spec of SETTINGS) {
    let raw: string | undefined = (spec.flag ? flags[spec.flag] : undefined) ?? env[spec.env];
    const fileVar = FILE_INDIRECTIONS[spec.env];
    if (fileVar && env[fileVar] && env[spec.env] !== undefined) {
      problems.push(`${spec.env} and ${fileVar} are both set; set one of them`);
      continue;
    }
    if (raw === undefined && fileVar && env[fileVar]) {
      try {
        raw = readFileSync(env[fileVar], 'utf8').replace(/\r?\n$/, '');
      } catch (error) {
        problems.push(`${fileVar}: cannot read ${env[fileVar]}: ${(error as Error).message}`);
        continue;
      }
    }
    raw ??= spec.default;
    if (raw === undefined) {
      out[spec.key] = undefined;
      continue;
    }
    try {
      out[spec.key] = spec.parse(raw, spec.flag ? `${spec.env} (${spec.flag})` : spec.env);
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  // A schema without a URL would silently mean SQLite: most likely the URL was forgotten.
  if (
    out.databaseSchema !== undefined &&
    out.databaseUrl === undefined &&
    !problems.some((p) => p.startsWith('GATEHOUSE_DATABASE_URL'))
  ) {
    problems.push(
      'GATEHOUSE_DATABASE_SCHEMA is set but GATEHOUSE_DATABASE_URL is not; the schema applies to PostgreSQL only',
    );
  }
  problems.push(...oidcProblems(out, problems));
  if (problems.length > 0) throw new SettingsError(`Invalid settings:\n  - ${problems.join('\n  - ')}`);
  const settings = out as Settings;
  settings.dataDir = isAbsolute(settings.dataDir) ? settings.dataDir : resolve(cwd, settings.dataDir);
  // INFERENCE_CONFIG_FILE stays as set: a relative value must reach the editor so it can say why it is off.
  const schema = settings.inferenceConfigSchema;
  if (schema !== undefined && !/^[a-z][a-z0-9+.-]+:/i.test(schema) && !isAbsolute(schema))
    settings.inferenceConfigSchema = resolve(cwd, schema);
  return Object.freeze(settings);
}

/** OpenID Connect needs its client ID and the public URL (the redirect URI is built from it). */
function oidcProblems(out: Partial<Record<keyof Settings, unknown>>, problems: readonly string[]): string[] {
  if (problems.some((p) => p.startsWith('GATEHOUSE_OIDC_'))) return [];
  const found: string[] = [];
  if (out.oidcIssuer === undefined) {
    for (const [key, env] of [
      ['oidcClientId', 'GATEHOUSE_OIDC_CLIENT_ID'],
      ['oidcClientSecret', 'GATEHOUSE_OIDC_CLIENT_SECRET'],
    ] as const) {
      if (out[key] !== undefined) found.push(`${env} is set but GATEHOUSE_OIDC_ISSUER is not`);
    }
    return found;
  }
  if (out.oidcClientId === undefined) found.push('GATEHOUSE_OIDC_ISSUER is set but GATEHOUSE_OIDC_CLIENT_ID is not');
  if (out.publicUrl === undefined && !problems.some((p) => p.startsWith('GATEHOUSE_PUBLIC_URL')))
    found.push(
      'GATEHOUSE_OIDC_ISSUER is set but GATEHOUSE_PUBLIC_URL is not; the redirect URI is ' +
        '<GATEHOUSE_PUBLIC_URL>/api/oidc/callback',
    );
  return found;
}

/** Test and embedding helper: defaults plus explicit overrides, without touching `process.env`. */
export function settingsFor(overrides: Partial<Settings> = {}, env: NodeJS.ProcessEnv = {}): Readonly<Settings> {
  return Object.freeze({ ...loadSettings(env), ...overrides });
}
