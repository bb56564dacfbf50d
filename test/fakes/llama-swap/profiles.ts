/**
 * Profiles as far as the simulator plays them: the names, descriptions and pins that
 * `GET /api/profiles` lists, and `hooks.on_startup.profile`, the profile llama-swap activates at
 * start and after each reload (llama-swap#1053). Pins do not rewrite routing in the simulator.
 */
export interface ProfileConfig {
  description: string;
  pins: Record<string, string>;
}

const LEGACY_PROFILE =
  'profile must be a mapping with description and pins; the legacy list syntax is no longer supported';

export function readProfiles(raw: unknown, fail: (message: string) => never): Map<string, ProfileConfig> {
  const out = new Map<string, ProfileConfig>();
  if (raw === undefined || raw === null) return out;
  if (!isRecord(raw)) fail('profiles must be a mapping');
  for (const id of Object.keys(raw).sort()) {
    const p = raw[id];
    if (!isRecord(p)) fail(`profile ${id}: ${LEGACY_PROFILE}`);
    const pins: Record<string, string> = {};
    if (isRecord(p.pins)) for (const [k, v] of Object.entries(p.pins)) pins[k] = v === null ? '' : String(v);
    out.set(id, { description: typeof p.description === 'string' ? p.description : '', pins });
  }
  return out;
}

/** `hooks.on_startup.profile`; it must name a configured profile. */
export function readStartupProfile(
  hooks: unknown,
  profiles: Map<string, ProfileConfig>,
  fail: (message: string) => never,
): string | undefined {
  const startup = isRecord(hooks) && isRecord(hooks.on_startup) ? hooks.on_startup : undefined;
  const name = startup?.profile;
  if (name === undefined || name === null || name === '') return undefined;
  if (typeof name !== 'string') fail('hooks.on_startup.profile must be a string');
  if (!profiles.has(name)) fail(`hooks.on_startup.profile: profile ${name} not found`);
  return name;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
