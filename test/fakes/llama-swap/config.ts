/**
 * llama-swap's config loader, reduced to what the simulator needs: macro
 * and `${PORT}` expansion, defaults, and the semantic checks whose failure keeps the old config
 * on reload. Unknown keys are ignored, as llama-swap's non-strict YAML decoding does.
 */
import { parse as parseYaml } from 'yaml';
import { readFilters, type Filters } from './filters.js';
import { readProfiles, readStartupProfile, type ProfileConfig } from './profiles.js';

export interface ModelCapabilities {
  in?: string[];
  out?: string[];
  tools?: boolean;
  reranker?: boolean;
  context?: number;
}

export interface ModelConfig {
  id: string;
  cmd: string;
  proxy: string;
  name: string;
  description: string;
  aliases: string[];
  /** Effective TTL in seconds (globalTTL applied); 0 = never. Fractions are accepted for tests. */
  ttl: number;
  unlisted: boolean;
  useModelName: string;
  concurrencyLimit: number;
  metadata: Record<string, unknown>;
  capabilities: ModelCapabilities | undefined;
  groupId: string;
  /** `sendLoadingState` (model value, else the top-level one). */
  sendLoadingState: boolean;
  filters: Filters;
}

export interface PeerConfig {
  id: string;
  proxy: string;
  models: string[];
  apiKey: string | undefined;
  filters: Filters;
}

export interface GroupConfig {
  id: string;
  members: string[];
  swap: boolean;
  exclusive: boolean;
  persistent: boolean;
}

export interface SimConfig {
  models: Map<string, ModelConfig>;
  peers: Map<string, PeerConfig>;
  groups: Map<string, GroupConfig>;
  includeAliasesInList: boolean;
  apiKeys: string[];
  logToStdout: 'proxy' | 'upstream' | 'both' | 'none';
  ignorePaths: RegExp;
  /** alias → model ID */
  aliases: Map<string, string>;
  /** Calls admitted at once over every model (`globalConcurrencyLimit`); 0 = no limit. */
  globalConcurrencyLimit: number;
  profiles: Map<string, ProfileConfig>;
  /** `hooks.on_startup.profile`: active after start and after every reload. */
  startupProfile: string | undefined;
}

export const DEFAULT_GROUP = '(default)';
const DEFAULT_IGNORE_PATHS = '.*\\.(js|json|css|png|gif|jpg|jpeg|ico|txt)$';

class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Load from YAML text or an already parsed object. Throws `ConfigError` with llama-swap-like text. */
export function loadConfig(source: string | Record<string, unknown>): SimConfig {
  let raw: unknown;
  if (typeof source === 'string') {
    try {
      // yaml's default uniqueKeys check rejects duplicate mapping keys like yaml.v3 does.
      raw = parseYaml(source);
    } catch (err) {
      throw new ConfigError(`yaml: ${(err as Error).message.split('\n')[0]}`);
    }
  } else {
    raw = source;
  }
  if (raw === null || raw === undefined) raw = {};
  if (!isRecord(raw)) throw new ConfigError('yaml: config root must be a mapping');
  return buildConfig(raw);
}

function buildConfig(raw: Record<string, unknown>): SimConfig {
  const globalMacros = readMacros(raw.macros, 'macros');
  const startPort = raw.startPort === undefined ? 5800 : num(raw.startPort, 'startPort');
  if (startPort < 1) throw new ConfigError('startPort must be greater than 1');
  const globalTTL = raw.globalTTL === undefined ? 0 : num(raw.globalTTL, 'globalTTL');
  if (globalTTL < 0) throw new ConfigError('globalTTL must be greater than or equal to 0');

  const rawModels = raw.models ?? {};
  if (!isRecord(rawModels)) throw new ConfigError('models must be a mapping of model IDs');
  const ids = Object.keys(rawModels).sort();

  // ${PORT} numbering follows the sorted IDs of the models whose cmd uses it.
  const ports = new Map<string, number>();
  let nextPort = startPort;
  for (const id of ids) {
    const m = rawModels[id];
    if (isRecord(m) && typeof m.cmd === 'string' && m.cmd.includes('${PORT}')) ports.set(id, nextPort++);
  }

  const models = new Map<string, ModelConfig>();
  const aliases = new Map<string, string>();
  for (const id of ids) {
    const m = rawModels[id];
    if (!isRecord(m)) throw new ConfigError(`model ${id}: must be a mapping`);
    const macros = new Map([...globalMacros, ...readMacros(m.macros, `models.${id}.macros`)]);
    macros.set('MODEL_ID', id);
    const port = ports.get(id);
    if (port !== undefined) macros.set('PORT', String(port));

    const cmdRaw = m.cmd === undefined || m.cmd === null ? '' : str(m.cmd, `models.${id}.cmd`);
    const proxyRaw = m.proxy === undefined ? 'http://localhost:${PORT}' : str(m.proxy, `models.${id}.proxy`);
    if (proxyRaw.includes('${PORT}') && !cmdRaw.includes('${PORT}')) {
      // The default proxy uses ${PORT}, so a model without ${PORT} in cmd (or without cmd) must set proxy.
      throw new ConfigError(`model ${id}: proxy uses \${PORT} but cmd does not`);
    }
    const cmd = expandMacros(cmdRaw.trim(), macros, `models.${id}.cmd`);
    const proxy = expandMacros(proxyRaw, macros, `models.${id}.proxy`);
    try {
      new URL(proxy);
    } catch {
      throw new ConfigError(`model ${id}: invalid proxy URL: ${proxy}`);
    }

    const modelAliases = m.aliases === undefined ? [] : strList(m.aliases, `models.${id}.aliases`);
    for (const alias of modelAliases) {
      if (aliases.has(alias)) throw new ConfigError(`duplicate alias ${alias} found in model: ${id}`);
      aliases.set(alias, id);
    }

    let ttl = m.ttl === undefined ? -1 : num(m.ttl, `models.${id}.ttl`);
    if (ttl === -1) ttl = globalTTL;
    if (ttl < 0) throw new ConfigError(`model ${id}: ttl must be greater than or equal to 0`);

    const concurrencyLimit =
      m.concurrencyLimit === undefined ? 0 : num(m.concurrencyLimit, `models.${id}.concurrencyLimit`);
    models.set(id, {
      id,
      cmd,
      proxy,
      name: m.name === undefined ? '' : str(m.name, `models.${id}.name`),
      description: m.description === undefined ? '' : str(m.description, `models.${id}.description`),
      aliases: modelAliases,
      ttl,
      unlisted: m.unlisted === true,
      useModelName: typeof m.useModelName === 'string' ? m.useModelName : '',
      concurrencyLimit: concurrencyLimit > 0 ? concurrencyLimit : 10,
      metadata: isRecord(m.metadata) ? m.metadata : {},
      capabilities: isRecord(m.capabilities) ? m.capabilities : undefined,
      groupId: DEFAULT_GROUP,
      sendLoadingState: typeof m.sendLoadingState === 'boolean' ? m.sendLoadingState : raw.sendLoadingState === true,
      filters: readFilters(m.filters),
    });
  }

  const groups = readGroups(raw.groups, models);
  const peers = readPeers(raw.peers, models, aliases);

  const apiKeys = raw.apiKeys === undefined || raw.apiKeys === null ? [] : strList(raw.apiKeys, 'apiKeys');
  for (const key of apiKeys) {
    if (key === '') throw new ConfigError('empty api key found in apiKeys');
    if (key.includes(' ')) throw new ConfigError('api key cannot contain spaces: `' + key + '`');
  }

  const logToStdout = raw.logToStdout === undefined ? 'proxy' : raw.logToStdout;
  if (logToStdout !== 'proxy' && logToStdout !== 'upstream' && logToStdout !== 'both' && logToStdout !== 'none') {
    throw new ConfigError(`logToStdout must be one of: proxy, upstream, both, none`);
  }

  let ignorePaths = new RegExp(DEFAULT_IGNORE_PATHS);
  const upstream = raw.upstream;
  if (isRecord(upstream) && upstream.ignorePaths !== undefined) {
    const pattern = str(upstream.ignorePaths, 'upstream.ignorePaths');
    try {
      ignorePaths = new RegExp(pattern);
    } catch (err) {
      throw new ConfigError(`upstream.ignorePaths: ${(err as Error).message}`);
    }
  }

  const fail = (message: string): never => {
    throw new ConfigError(message);
  };
  const profiles = readProfiles(raw.profiles, fail);
  return {
    models,
    peers,
    groups,
    profiles,
    startupProfile: readStartupProfile(raw.hooks, profiles, fail),
    includeAliasesInList: raw.includeAliasesInList === true,
    globalConcurrencyLimit:
      raw.globalConcurrencyLimit === undefined ? 0 : num(raw.globalConcurrencyLimit, 'globalConcurrencyLimit'),
    apiKeys,
    logToStdout,
    ignorePaths,
    aliases,
  };
}

function readGroups(raw: unknown, models: Map<string, ModelConfig>): Map<string, GroupConfig> {
  const groups = new Map<string, GroupConfig>();
  const seen = new Map<string, string>();
  if (raw !== undefined && raw !== null) {
    if (!isRecord(raw)) throw new ConfigError('groups must be a mapping');
    for (const gid of Object.keys(raw).sort()) {
      const g = raw[gid];
      if (!isRecord(g)) throw new ConfigError(`group ${gid}: must be a mapping`);
      const members = g.members === undefined ? [] : strList(g.members, `groups.${gid}.members`);
      for (const member of members) {
        const other = seen.get(member);
        if (other === gid) throw new ConfigError(`duplicate model member ${member} found in group: ${gid}`);
        if (other !== undefined)
          throw new ConfigError(`model member ${member} is used in multiple groups: ${other} and ${gid}`);
        seen.set(member, gid);
        // llama-swap fails this when building the server ("failed to build new server during reload").
        if (!models.has(member)) throw new ConfigError(`group ${gid}: member ${member} is not a configured model`);
      }
      groups.set(gid, {
        id: gid,
        members,
        swap: g.swap !== false,
        exclusive: g.exclusive !== false,
        persistent: g.persistent === true,
      });
    }
  }
  const defaultMembers: string[] = [];
  for (const [id, model] of models) {
    const gid = seen.get(id);
    if (gid !== undefined) model.groupId = gid;
    else defaultMembers.push(id);
  }
  groups.set(DEFAULT_GROUP, {
    id: DEFAULT_GROUP,
    members: defaultMembers,
    swap: true,
    exclusive: true,
    persistent: false,
  });
  return groups;
}

function readPeers(
  raw: unknown,
  models: Map<string, ModelConfig>,
  aliases: Map<string, string>,
): Map<string, PeerConfig> {
  const peers = new Map<string, PeerConfig>();
  if (raw === undefined || raw === null) return peers;
  if (!isRecord(raw)) throw new ConfigError('peers must be a mapping');
  const fqns = new Set<string>();
  for (const pid of Object.keys(raw).sort()) {
    const p = raw[pid];
    if (!isRecord(p)) throw new ConfigError(`peer ${pid}: must be a mapping`);
    const proxy = p.proxy === undefined ? '' : str(p.proxy, `peers.${pid}.proxy`);
    if (proxy === '') throw new ConfigError(`peer ${pid}: proxy is required`);
    try {
      new URL(proxy);
    } catch {
      throw new ConfigError(`peer ${pid}: invalid proxy URL: ${proxy}`);
    }
    const peerModels = p.models === undefined ? [] : strList(p.models, `peers.${pid}.models`);
    if (peerModels.length === 0) throw new ConfigError(`peer ${pid}: models must not be empty`);
    for (const modelId of peerModels) {
      const fqn = `${pid}/${modelId}`;
      if (fqns.has(fqn)) throw new ConfigError(`peer ${pid}: duplicate peer model ${fqn}`);
      if (models.has(fqn) || aliases.has(fqn))
        throw new ConfigError(`peer ${pid}: peer model ${fqn} conflicts with a local model or alias`);
      fqns.add(fqn);
    }
    peers.set(pid, {
      id: pid,
      proxy,
      models: peerModels,
      apiKey: typeof p.apiKey === 'string' ? p.apiKey : undefined,
      filters: readFilters(p.filters),
    });
  }
  return peers;
}

function readMacros(raw: unknown, where: string): Map<string, string> {
  const out = new Map<string, string>();
  if (raw === undefined || raw === null) return out;
  if (!isRecord(raw)) throw new ConfigError(`${where} must be a mapping`);
  for (const [name, value] of Object.entries(raw)) {
    if (!/^[a-zA-Z0-9_-]+$/.test(name) || name.length >= 64)
      throw new ConfigError(`${where}: invalid macro name "${name}"`);
    if (name === 'PID' || name === 'PORT' || name === 'MODEL_ID')
      throw new ConfigError(`${where}: macro name "${name}" is reserved`);
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new ConfigError(`${where}: macro "${name}" must be a scalar value`);
    }
    // A macro may only reference macros declared before it.
    out.set(name, expandMacros(String(value), out, `${where}.${name}`));
  }
  return out;
}

function expandMacros(text: string, macros: Map<string, string>, where: string): string {
  const expanded = text.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
    if (name.startsWith('env.')) {
      const value = process.env[name.slice(4)];
      if (value === undefined) throw new ConfigError(`${where}: environment variable '${name.slice(4)}' is not set`);
      return value;
    }
    const value = macros.get(name);
    return value === undefined ? whole : value;
  });
  const leftover = /\$\{([^}]+)\}/.exec(expanded);
  if (leftover) throw new ConfigError(`${where}: unknown macro '\${${leftover[1]}}'`);
  return expanded;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown, where: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new ConfigError(`${where} must be a string`);
}

function num(v: unknown, where: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  throw new ConfigError(`${where} must be a number`);
}

function strList(v: unknown, where: string): string[] {
  if (!Array.isArray(v)) throw new ConfigError(`${where} must be a list`);
  return v.map((item, i) => str(item, `${where}[${i}]`));
}

export type ResolvedModel =
  { kind: 'local'; id: string } | { kind: 'peer'; peerId: string; modelId: string; fqn: string };

/** `RealModelName`: a model ID, then an alias (an alias equal to another model's ID loses). */
export function realModelName(cfg: SimConfig, name: string): string | undefined {
  if (cfg.models.has(name)) return name;
  return cfg.aliases.get(name);
}

/**
 * Dispatch resolution: local ID/alias first, then a peer FQN `<peer>/<model>`, then a bare
 * peer model ID listed by exactly one peer.
 */
export function resolveModel(cfg: SimConfig, name: string): ResolvedModel | undefined {
  const local = realModelName(cfg, name);
  if (local !== undefined) return { kind: 'local', id: local };
  const slash = name.indexOf('/');
  if (slash > 0) {
    const peer = cfg.peers.get(name.slice(0, slash));
    const modelId = name.slice(slash + 1);
    if (peer && peer.models.includes(modelId)) return { kind: 'peer', peerId: peer.id, modelId, fqn: name };
  }
  const owners = [...cfg.peers.values()].filter((p) => p.models.includes(name));
  if (owners.length === 1 && owners[0])
    return { kind: 'peer', peerId: owners[0].id, modelId: name, fqn: `${owners[0].id}/${name}` };
  return undefined;
}
