/**
 * Checks llama-swap's loader makes that its JSON schema cannot express (docs/llama-swap.md, "Configuration"). A
 * config failing one of them is schema-valid, but llama-swap refuses it on reload and keeps
 * the old one, so the editor shows them as warnings before saving. Each finding names a JSON
 * pointer; `validate.ts` turns it into a line and column.
 *
 * They run on the parsed value (YAML merge keys applied) and only look at shapes the schema
 * already allows: anything of an unexpected type is skipped here and reported by the schema.
 */

export interface LoaderFinding {
  /** JSON pointer of the offending value (or of the key, with `at: 'key'`). */
  path: string;
  message: string;
  at: 'key' | 'value';
}

type Obj = Record<string, unknown>;

const MACRO_NAME = /^[a-zA-Z0-9_-]+$/;
const RESERVED_MACROS = new Set(['PID', 'PORT', 'MODEL_ID']);
const PLACEHOLDER = /\$\{([^}]*)\}/g;
const REFUSES = 'llama-swap refuses this config on reload and keeps the old one';

export function loaderChecks(config: unknown): LoaderFinding[] {
  if (!isObj(config)) return [];
  const out: LoaderFinding[] = [];
  const add = (path: string, message: string, at: 'key' | 'value' = 'value') => out.push({ path, message, at });

  const models = isObj(config.models) ? config.models : {};
  const modelIds = new Set(Object.keys(models));
  const globalMacros = isObj(config.macros) ? config.macros : {};

  checkMacros(globalMacros, '/macros', new Set(), add);

  // Aliases (and setParamsByID keys, which become aliases) must be unique across models.
  const aliasOwner = new Map<string, string>();
  for (const [id, model] of Object.entries(models)) {
    if (!isObj(model)) continue;
    const base = `/models/${ptr(id)}`;
    const aliases = Array.isArray(model.aliases) ? model.aliases : [];
    aliases.forEach((alias, i) => {
      if (typeof alias !== 'string') return;
      const owner = aliasOwner.get(alias);
      if (owner !== undefined) {
        const where = owner === id ? 'listed twice for this model' : `also an alias of model "${owner}"`;
        add(
          `${base}/aliases/${i}`,
          `Alias "${alias}" is ${where}: ${REFUSES} (duplicate alias ${alias} found in model: ${id}).`,
        );
      } else {
        aliasOwner.set(alias, id);
      }
    });
  }
  const byIdOwner = new Map<string, string>();
  for (const [id, model] of Object.entries(models)) {
    if (!isObj(model) || !isObj(model.filters) || !isObj(model.filters.setParamsByID)) continue;
    for (const key of Object.keys(model.filters.setParamsByID)) {
      const path = `/models/${ptr(id)}/filters/setParamsByID/${ptr(key)}`;
      const aliasOf = aliasOwner.get(key);
      const otherById = byIdOwner.get(key);
      if (modelIds.has(key) && key !== id)
        add(
          path,
          `setParamsByID key "${key}" is the ID of model "${key}"; these keys become aliases, so ${REFUSES}.`,
          'key',
        );
      else if (aliasOf !== undefined && aliasOf !== id)
        add(
          path,
          `setParamsByID key "${key}" is already an alias of model "${aliasOf}"; these keys become ` +
            `aliases, so ${REFUSES}.`,
          'key',
        );
      else if (otherById !== undefined && otherById !== id)
        add(
          path,
          `setParamsByID key "${key}" is also used by model "${otherById}"; these keys become aliases, so ${REFUSES}.`,
          'key',
        );
      else byIdOwner.set(key, id);
    }
  }

  for (const [id, model] of Object.entries(models)) {
    if (!isObj(model)) continue;
    const base = `/models/${ptr(id)}`;
    const modelMacros = isObj(model.macros) ? model.macros : {};
    checkMacros(modelMacros, `${base}/macros`, new Set(Object.keys(globalMacros)), add);
    const macros: Obj = { ...globalMacros, ...modelMacros };

    // Placeholders left after macro expansion are load errors; ${PID} only works in cmdStop.
    const fields: Array<[string, unknown]> = [
      ['cmd', model.cmd],
      ['cmdStop', model.cmdStop],
      ['proxy', model.proxy],
      ['checkEndpoint', model.checkEndpoint],
    ];
    if (Array.isArray(model.env)) model.env.forEach((v, i) => fields.push([`env/${i}`, v]));
    for (const [field, value] of fields) {
      if (typeof value !== 'string') continue;
      for (const ref of placeholders(value)) {
        if (ref === 'PID') {
          if (field !== 'cmdStop')
            add(`${base}/${field}`, `\${PID} is only available in cmdStop; in ${field} ${REFUSES}.`);
        } else if (!knownPlaceholder(ref, macros))
          add(`${base}/${field}`, `\${${ref}} is not a declared macro (global or of this model): ${REFUSES}.`);
      }
    }

    // ${PORT} in proxy needs ${PORT} in cmd; the default proxy is http://localhost:${PORT}.
    if (typeof model.cmd === 'string') {
      const cmdUsesPort = expand(model.cmd, macros).includes('${PORT}');
      if (!cmdUsesPort) {
        if (model.proxy === undefined) {
          add(
            `${base}/cmd`,
            `cmd does not use \${PORT} and proxy is not set: the default proxy (http://localhost:\${PORT}) needs \${PORT} in cmd, so ${REFUSES}. Set proxy to the address the server listens on, or pass --port \${PORT}.`,
          );
        } else if (typeof model.proxy === 'string' && expand(model.proxy, macros).includes('${PORT}')) {
          add(`${base}/proxy`, `proxy uses \${PORT} but cmd does not: ${REFUSES}.`);
        }
      }
    }
  }

  // Peers: models must be non-empty (the schema allows []).
  const peers = isObj(config.peers) ? config.peers : {};
  const peerModels = new Set<string>();
  const bareCount = new Map<string, number>();
  for (const [pid, peer] of Object.entries(peers)) {
    if (!isObj(peer) || !Array.isArray(peer.models)) continue;
    if (peer.models.length === 0) add(`/peers/${ptr(pid)}/models`, `Peer "${pid}" lists no models: ${REFUSES}.`);
    for (const m of peer.models) {
      if (typeof m !== 'string') continue;
      peerModels.add(`${pid}/${m}`);
      bareCount.set(m, (bareCount.get(m) ?? 0) + 1);
    }
  }
  // A bare peer model ID resolves when exactly one peer lists it.
  for (const [m, n] of bareCount) if (n === 1) peerModels.add(m);

  // Groups: legacy top-level, and routing.router.settings.groups.
  const routing = isObj(config.routing) ? config.routing : undefined;
  const router = routing && isObj(routing.router) ? routing.router : undefined;
  if (router && (config.groups !== undefined || config.matrix !== undefined)) {
    add(
      '/routing/router',
      `routing.router cannot be combined with the legacy top-level groups/matrix keys: ${REFUSES}.`,
      'key',
    );
  }
  checkGroups(config.groups, '/groups', modelIds, add);
  const routerSettings = router && isObj(router.settings) ? router.settings : undefined;
  if (routerSettings) checkGroups(routerSettings.groups, '/routing/router/settings/groups', modelIds, add);

  // apiKeys: no spaces (empty keys are a schema error).
  if (Array.isArray(config.apiKeys)) {
    config.apiKeys.forEach((key, i) => {
      if (typeof key === 'string' && /\s/.test(key))
        add(`/apiKeys/${i}`, `API keys cannot contain spaces: ${REFUSES}.`);
    });
  }

  // upstream.ignorePaths must compile as Go RE2, which has no look-around or backreferences.
  const upstream = isObj(config.upstream) ? config.upstream : undefined;
  if (upstream && Array.isArray(upstream.ignorePaths)) {
    upstream.ignorePaths.forEach((pattern, i) => {
      if (typeof pattern !== 'string') return;
      const problem = re2Problem(pattern);
      if (problem)
        add(
          `/upstream/ignorePaths/${i}`,
          `Not an RE2 regular expression (${problem}); Go's regexp rejects it, so ${REFUSES}.`,
        );
    });
  }

  // Targets of profiles and selectors must resolve.
  const selectors = isObj(config.selectors) ? config.selectors : {};
  const isLocal = (t: string) => modelIds.has(t) || aliasOwner.has(t) || byIdOwner.has(t);
  const resolves = (t: string) => isLocal(t) || peerModels.has(t) || t in selectors;
  for (const [sid, selector] of Object.entries(selectors)) {
    if (!isObj(selector) || !Array.isArray(selector.targets)) continue;
    if (modelIds.has(sid) || aliasOwner.has(sid))
      add(`/selectors/${ptr(sid)}`, `Selector "${sid}" has the name of a model or alias: ${REFUSES}.`, 'key');
    selector.targets.forEach((target, i) => {
      if (typeof target !== 'string' || target === '') return;
      if (target in selectors)
        add(
          `/selectors/${ptr(sid)}/targets/${i}`,
          `Target "${target}" is a selector; selectors cannot target selectors, so ${REFUSES}.`,
        );
      else if (!isLocal(target) && !peerModels.has(target))
        add(
          `/selectors/${ptr(sid)}/targets/${i}`,
          `Target "${target}" is not a model, alias or peer model: ${REFUSES}.`,
        );
    });
  }
  const profiles = isObj(config.profiles) ? config.profiles : {};
  for (const [name, profile] of Object.entries(profiles)) {
    if (!isObj(profile) || !isObj(profile.pins)) continue;
    for (const [pin, target] of Object.entries(profile.pins)) {
      if (typeof target !== 'string' || target === '') continue;
      if (!resolves(target)) {
        add(
          `/profiles/${ptr(name)}/pins/${ptr(pin)}`,
          `Profile target "${target}" is not a model, alias, peer model or selector: ${REFUSES}.`,
        );
      }
    }
  }

  return out;
}

function checkMacros(
  macros: Obj,
  base: string,
  outer: ReadonlySet<string>,
  add: (path: string, message: string, at?: 'key' | 'value') => void,
): void {
  const names = Object.keys(macros);
  const declared = new Set(outer);
  for (const name of names) {
    const path = `${base}/${ptr(name)}`;
    if (!MACRO_NAME.test(name) || name.length >= 64) {
      add(
        path,
        `Macro name "${name}" must match ^[a-zA-Z0-9_-]+$ and be shorter than 64 characters: ${REFUSES}.`,
        'key',
      );
    } else if (RESERVED_MACROS.has(name)) {
      add(path, `"${name}" is reserved and cannot be a macro name: ${REFUSES}.`, 'key');
    }
    const value = macros[name];
    if (typeof value === 'string') {
      for (const ref of placeholders(value)) {
        if (ref === name) add(path, `Macro "${name}" refers to itself: ${REFUSES}.`);
        else if (RESERVED_MACROS.has(ref) || ref.startsWith('env.') || declared.has(ref)) continue;
        else if (names.includes(ref))
          add(
            path,
            `Macro "${name}" uses \${${ref}}, which is declared after it; a macro may only use macros ` +
              `declared before it, so ${REFUSES}.`,
          );
        else add(path, `Macro "${name}" uses \${${ref}}, which is not a declared macro: ${REFUSES}.`);
      }
    }
    declared.add(name);
  }
}

function checkGroups(
  raw: unknown,
  base: string,
  modelIds: ReadonlySet<string>,
  add: (path: string, message: string) => void,
): void {
  if (!isObj(raw)) return;
  const memberOf = new Map<string, string>();
  for (const [gid, group] of Object.entries(raw)) {
    if (!isObj(group) || !Array.isArray(group.members)) continue;
    const seen = new Set<string>();
    group.members.forEach((member, i) => {
      if (typeof member !== 'string') return;
      const path = `${base}/${ptr(gid)}/members/${i}`;
      if (seen.has(member)) add(path, `"${member}" is listed twice in group "${gid}": ${REFUSES}.`);
      else if (memberOf.has(member))
        add(
          path,
          `"${member}" is also a member of group "${memberOf.get(member)}"; a model can be in one group ` +
            `only, so ${REFUSES}.`,
        );
      else if (!modelIds.has(member))
        add(path, `Group member "${member}" is not a model ID defined under models: ${REFUSES}.`);
      seen.add(member);
      if (!memberOf.has(member)) memberOf.set(member, gid);
    });
  }
}

function knownPlaceholder(ref: string, macros: Obj): boolean {
  return ref === 'PORT' || ref === 'MODEL_ID' || ref.startsWith('env.') || Object.hasOwn(macros, ref);
}

function placeholders(value: string): string[] {
  return [...value.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/** Macro expansion as far as needed to see whether `${PORT}` ends up in a string. */
function expand(value: string, macros: Obj): string {
  let current = value;
  for (let i = 0; i < 10; i++) {
    const next = current.replace(PLACEHOLDER, (whole, name: string) => {
      const v = Object.hasOwn(macros, name) ? macros[name] : undefined;
      return v === undefined || v === null || typeof v === 'object' ? whole : String(v);
    });
    if (next === current) break;
    current = next;
  }
  return current;
}

/** RE2 lacks look-around, backreferences, atomic groups and possessive quantifiers. */
export function re2Problem(pattern: string): string | undefined {
  // Skip escaped characters and character classes so `\(?=` or `[(?=]` are not flagged.
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return `backreference \\${next}`;
      if (!inClass && next === 'k' && pattern[i + 2] === '<') return 'named backreference \\k<...>';
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') {
      inClass = true;
      if (pattern[i + 1] === ']') i++;
      continue;
    }
    if (c === '(' && pattern[i + 1] === '?') {
      const rest = pattern.slice(i + 2, i + 5);
      if (rest.startsWith('=') || rest.startsWith('!')) return 'look-ahead (?=...) / (?!...)';
      if (rest.startsWith('<=') || rest.startsWith('<!')) return 'look-behind (?<=...) / (?<!...)';
      if (rest.startsWith('>')) return 'atomic group (?>...)';
    }
    if ((c === '+' || c === '*' || c === '?' || c === '}') && pattern[i + 1] === '+') return 'possessive quantifier';
  }
  return undefined;
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON-pointer escaping of one segment (RFC 6901). */
function ptr(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
