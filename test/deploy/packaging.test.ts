/**
 * The deployment files (Dockerfile, .dockerignore, deploy/*, docs/deployment.md) cannot be run
 * here (no Docker engine, no systemd), so this checks what can silently rot: every command
 * they run is one the real CLI knows, every variable is a real setting, every copied path
 * exists, the health check is served, llama-swap's flags are real, and the stop timeouts
 * outlast the shutdown grace.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { FILE_INDIRECTIONS, parseDuration, parseSize, SETTINGS } from '../../src/settings/index.js';
import { SQLITE_FILE_NAME } from '../../src/store/sqlite.js';
import { rawRequest } from '../helpers/http.js';
import { REPO_ROOT, runCli, spawnGateway, type GatewayProcess } from '../helpers/process.js';

const read = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');
const DOCKERFILE = read('Dockerfile');
const DOCKERIGNORE = read('.dockerignore');
const COMPOSE_TEXT = read('deploy/compose.yaml');
const UNIT = read('deploy/gatehouse.service');
const NGINX = read('deploy/nginx.conf');
const CADDYFILE = read('deploy/Caddyfile');
const DEPLOYMENT_DOC = read('docs/deployment.md');
const PACKAGE = JSON.parse(read('package.json')) as {
  engines: { node: string };
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
};

/** Where `npm run build` (tsc -p tsconfig.build.json, which extends tsconfig.json) writes. */
const TS_OPTIONS = (JSON.parse(read('tsconfig.json')) as { compilerOptions: { outDir: string; rootDir: string } })
  .compilerOptions;
const TS_OUT_DIR = posix.normalize(TS_OPTIONS.outDir);
const TS_ROOT_DIR = TS_OPTIONS.rootDir;

const SETTING_NAMES = new Set([...SETTINGS.map((s) => s.env), ...Object.values(FILE_INDIRECTIONS)]);
const settingDefault = (env: string): string => {
  const spec = SETTINGS.find((s) => s.env === env);
  if (!spec?.default) throw new Error(`${env} has no default`);
  return spec.default;
};

/** llama-swap's command-line flags (llama-swap's `llama-swap.go`; docs/llama-swap.md, "Process"). */
const LLAMA_SWAP_FLAGS = new Set([
  '-config',
  '-config-dir',
  '-listen',
  '-tls-cert-file',
  '-tls-key-file',
  '-watch-config',
]);
const LLAMA_SWAP_FLAGS_WITH_VALUE = new Set(['-config', '-config-dir', '-listen', '-tls-cert-file', '-tls-key-file']);

// ---- Dockerfile -------------------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
  stage: number;
}

/** Instructions with continuation lines joined and comments dropped; `stage` counts FROMs. */
function dockerInstructions(text: string): Instruction[] {
  const logical: string[] = [];
  let current = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line)) continue;
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    current += line;
    if (current.trim()) logical.push(current.trim());
    current = '';
  }
  let stage = -1;
  return logical.map((l) => {
    const match = /^(\S+)\s*(.*)$/s.exec(l)!;
    const keyword = match[1]!.toUpperCase();
    if (keyword === 'FROM') stage++;
    return { keyword, args: match[2]!.trim(), stage };
  });
}

const INSTRUCTIONS = dockerInstructions(DOCKERFILE);
const FINAL_STAGE = Math.max(...INSTRUCTIONS.map((i) => i.stage));
const only = (keyword: string, stage = FINAL_STAGE): Instruction[] =>
  INSTRUCTIONS.filter((i) => i.keyword === keyword && i.stage === stage);
const jsonArgs = (keyword: string): string[] => {
  const found = only(keyword);
  expect(found, keyword).toHaveLength(1);
  return JSON.parse(found[0]!.args) as string[];
};

/** `ENV A=1 B=2` pairs (the only ENV form used). */
function envPairs(stage: number): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const i of only('ENV', stage)) for (const m of i.args.matchAll(/(\S+?)=(\S+)/g)) pairs.set(m[1]!, m[2]!);
  return pairs;
}

/** `.dockerignore` as the Docker builder reads it, for the plain patterns used here. */
function ignoredByDockerignore(path: string): boolean {
  const patterns = DOCKERIGNORE.split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  return patterns.some((p) => {
    const pattern = p.replace(/^\//, '').replace(/\/$/, '');
    if (pattern.includes('*')) {
      const re = new RegExp(
        `^${pattern
          .split('*')
          .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
          .join('[^/]*')}$`,
      );
      return re.test(path) || path.split('/').some((_, n, parts) => re.test(parts.slice(0, n + 1).join('/')));
    }
    return path === pattern || path.startsWith(`${pattern}/`);
  });
}

function satisfiesMinimum(range: string, version: string): boolean {
  const min = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim());
  if (!min) throw new Error(`engines range "${range}" is not of the form >=X.Y.Z; teach this test the new form`);
  const want = [Number(min[1]), Number(min[2] ?? 0), Number(min[3] ?? 0)];
  const have = version.split('.').map(Number);
  for (let n = 0; n < 3; n++) {
    if ((have[n] ?? 0) !== want[n]) return (have[n] ?? 0) > want[n]!;
  }
  return true;
}

// ---- the real CLI -----------------------------------------------------------------------------

let cliCommands: Set<string>;
let keysCommands: Set<string>;

/** Command names listed under "Commands:" in a help text. */
function commandsIn(help: string): Set<string> {
  const section = help.split(/^Commands:\s*$/m)[1] ?? '';
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    if (/^\S/.test(line)) break;
    const match = /^ {2}([a-z][a-z-]*)\b/.exec(line);
    if (match) names.add(match[1]!);
  }
  return names;
}

let gateway: GatewayProcess;

beforeAll(async () => {
  const [main, keys] = await Promise.all([runCli(['--help'], {}), runCli(['keys', '--help'], {})]);
  expect(main.code, main.stderr).toBe(0);
  expect(keys.code, keys.stderr).toBe(0);
  cliCommands = commandsIn(main.stdout);
  keysCommands = commandsIn(keys.stdout);
  expect([...cliCommands]).toEqual(expect.arrayContaining(['serve', 'keys', 'backup']));
  expect([...keysCommands]).toEqual(expect.arrayContaining(['create', 'list', 'revoke', 'delete']));
  gateway = await spawnGateway({
    GATEHOUSE_DATA_DIR: mkdtempSync(join(tmpdir(), 'gh-packaging-')),
    GATEHOUSE_UPSTREAM_URL: 'http://127.0.0.1:9',
  });
});

afterAll(async () => {
  if (!gateway) return;
  gateway.child.kill('SIGTERM');
  await gateway.exited;
});

/** Checks `serve --flag value ...` / `keys create ...` against what the CLI accepts. */
function expectKnownInvocation(args: string[], where: string): void {
  const [command, ...rest] = args;
  expect(
    cliCommands.has(command ?? ''),
    `${where}: "${command}" is not a gatehouse command (${[...cliCommands].join(', ')})`,
  ).toBe(true);
  if (command === 'serve') {
    const flags = new Set(SETTINGS.flatMap((s) => (s.flag ? [s.flag] : [])));
    for (const arg of rest.filter((a) => a.startsWith('--')))
      expect(flags.has(arg.split('=')[0]!), `${where}: unknown serve flag ${arg}`).toBe(true);
  }
  if (command === 'keys' && rest[0] !== undefined && !rest[0].startsWith('-')) {
    expect(keysCommands.has(rest[0]), `${where}: "keys ${rest[0]}" is not a keys command`).toBe(true);
  }
}

function runNode(args: string[], env: Record<string, string>): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
    child.once('exit', (code) => resolve(code));
  });
}

describe('Dockerfile', () => {
  it('builds and runs on one pinned Node LTS bookworm-slim image that satisfies package.json engines', () => {
    const images = INSTRUCTIONS.filter((i) => i.keyword === 'FROM').map((i) => i.args.split(/\s+/)[0]!);
    expect(images.length).toBeGreaterThanOrEqual(2);
    expect(new Set(images).size, 'every stage uses the same image, so the native module matches').toBe(1);
    const match = /^node:(\d+)\.(\d+)\.(\d+)-bookworm-slim$/.exec(images[0]!);
    expect(match, `${images[0]} is not a pinned node:X.Y.Z-bookworm-slim`).not.toBeNull();
    expect(Number(match![1]) % 2, 'an even major is an LTS line').toBe(0);
    expect(satisfiesMinimum(PACKAGE.engines.node, `${match![1]}.${match![2]}.${match![3]}`)).toBe(true);
  });

  it('copies into the build stage only paths that exist and that .dockerignore lets through', () => {
    const copies = INSTRUCTIONS.filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const parts = copy.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      for (const source of parts.slice(0, -1)) {
        if (source === '.') continue;
        expect(existsSync(join(REPO_ROOT, source)), `COPY ${source}: missing in the repository`).toBe(true);
        expect(ignoredByDockerignore(source), `COPY ${source}: excluded by .dockerignore`).toBe(false);
      }
    }
    // `COPY . .` then `npm run build`: what tsconfig.build.json compiles and the dashboard
    // sources must reach the build context.
    const build = JSON.parse(read('tsconfig.build.json')) as { include: string[] };
    for (const path of [
      ...build.include,
      'web/index.html',
      'web/src',
      'web/vite.config.ts',
      'tsconfig.json',
      '.npmrc',
    ]) {
      expect(ignoredByDockerignore(path), `${path} is needed by the build but ignored`).toBe(false);
    }
    for (const path of [
      'node_modules',
      'dist',
      'web/dist',
      '.git',
      'data',
      'data/gatehouse.db',
      'deploy/models',
      'deploy/secrets',
      '.env',
    ]) {
      expect(ignoredByDockerignore(path), `${path} should stay out of the build context`).toBe(true);
    }
  });

  it('builds with the real npm scripts, compiles only the one native module, and prunes dev dependencies', () => {
    const run = INSTRUCTIONS.filter((i) => i.keyword === 'RUN')
      .map((i) => i.args)
      .join('\n');
    expect(run).toContain('npm ci --ignore-scripts');
    expect(run).toContain('npm run build');
    expect(PACKAGE.scripts.build).toBeDefined();
    expect(run).toMatch(/npm prune --omit=dev/);
    expect(run).toMatch(/apt-get install .*python3 make g\+\+/);
    // Scripts are held back and only better-sqlite3 is rebuilt: a new runtime dependency with an
    // install script would silently not be built. Dev-only ones (esbuild, under tsx for the
    // tests) are pruned before the runtime stage, and the build does not run them.
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { hasInstallScript?: boolean; dev?: boolean }>;
    };
    const withScripts = Object.entries(lock.packages)
      .filter(([, p]) => p.hasInstallScript && !p.dev)
      .map(([name]) => name.replace(/^node_modules\//, ''));
    const rebuilt = [...run.matchAll(/npm rebuild ([^&\n]+)/g)].flatMap((m) => m[1]!.trim().split(/\s+/));
    expect(withScripts.sort()).toEqual(rebuilt.sort());
    expect(PACKAGE.dependencies['better-sqlite3']).toBeDefined();
    expect(read('.npmrc')).toMatch(/^build-from-source=true$/m);
  });

  it('copies into the runtime stage what the build produced and what bin/gatehouse loads', () => {
    const workdir = only('WORKDIR', 0)[0]!.args;
    const buildOptions = (JSON.parse(read('tsconfig.build.json')) as { compilerOptions: Record<string, unknown> })
      .compilerOptions;
    expect(buildOptions.outDir ?? TS_OPTIONS.outDir, 'tsconfig.build.json writes where tsconfig.json says').toBe(
      TS_OPTIONS.outDir,
    );
    const fromBuild = only('COPY').filter((i) => i.args.startsWith('--from=build'));
    const copied: string[] = [];
    for (const copy of fromBuild) {
      const [source, target] = copy.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      const relative = posix.relative(workdir, source!);
      expect(relative.startsWith('..'), `${source} is outside the build WORKDIR ${workdir}`).toBe(false);
      // The tests run from source, so dist/ may not exist: it is checked as tsc's output folder.
      if (relative !== TS_OUT_DIR)
        expect(existsSync(join(REPO_ROOT, relative)), `${relative} (built by npm run build) does not exist`).toBe(true);
      expect(posix.normalize(target!.replace(/^\.\//, '')).replace(/\/$/, '')).toBe(relative);
      copied.push(relative);
    }
    const bin = read('bin/gatehouse');
    // Plain node from PATH: runtime tuning is the operator's choice (docs/deployment.md).
    expect(bin.split('\n', 1)[0]).toBe('#!/usr/bin/env node');
    const entry = /from '\.\.\/([^']+)'/.exec(bin)?.[1];
    expect(entry).toBe(`${TS_OUT_DIR}/src/cli/main.js`);
    expect(
      existsSync(join(REPO_ROOT, TS_ROOT_DIR, 'src/cli/main.ts')),
      'bin/gatehouse loads the build of src/cli/main.ts',
    ).toBe(true);
    for (const needed of ['package.json', 'node_modules', 'bin', 'dist', 'web/index.html', 'web/dist']) {
      expect(copied, `the runtime stage lacks ${needed}`).toContain(needed);
    }
  });

  it('runs `gatehouse serve` as a non-root user with the data dir on the volume', () => {
    const entrypoint = jsonArgs('ENTRYPOINT');
    const cmd = jsonArgs('CMD');
    expect(entrypoint).toEqual(['./bin/gatehouse']);
    accessSync(join(REPO_ROOT, 'bin/gatehouse'), constants.X_OK);
    expectKnownInvocation([...entrypoint.slice(1), ...cmd], 'Dockerfile CMD');
    expect(cmd[0]).toBe('serve');

    const user = only('USER')[0]?.args;
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);

    const env = envPairs(FINAL_STAGE);
    for (const name of env.keys()) {
      if (/^(GATEHOUSE_|INFERENCE_)|^(HOST|PORT)$/.test(name))
        expect(SETTING_NAMES.has(name), `ENV ${name} is not a setting`).toBe(true);
      else expect(name).toBe('NODE_ENV');
    }
    expect(JSON.parse(only('VOLUME')[0]!.args)).toEqual([env.get('GATEHOUSE_DATA_DIR')]);
    expect(only('EXPOSE')[0]!.args).toBe(env.get('PORT'));
    expect(env.get('PORT')).toBe(settingDefault('PORT'));
    expect(only('STOPSIGNAL')[0]?.args).toBe('SIGTERM');
  });

  it('health-checks /healthz with node; the exact command passes against a running gateway and fails without one', async () => {
    const line = only('HEALTHCHECK')[0]!.args;
    const cmd = JSON.parse(/CMD\s+(\[.*\])$/.exec(line)![1]!) as string[];
    expect(cmd[0]).toBe('node');
    expect(cmd.join(' ')).toContain('/healthz');
    expect(cmd.join(' ')).not.toMatch(/curl|wget/);

    const port = new URL(gateway.url).port;
    expect((await rawRequest(`${gateway.url}/healthz`)).status).toBe(200);
    expect(await runNode(cmd.slice(1), { PORT: port })).toBe(0);
    expect(await runNode(cmd.slice(1), { PORT: '9' })).toBe(1);
  });
});

// ---- compose ----------------------------------------------------------------------------------

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  entrypoint?: string[];
  command?: string[];
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, string>;
  secrets?: string[];
  stop_grace_period?: string;
}
const COMPOSE = parseYaml(COMPOSE_TEXT) as {
  services: Record<string, ComposeService>;
  secrets?: Record<string, { file: string }>;
};
const LLAMA = COMPOSE.services['llama-swap']!;
const GATEHOUSE = COMPOSE.services.gatehouse!;

/** `host:container[:mode]` bind mounts and named volumes, by container path. */
function mounts(service: ComposeService): Map<string, string> {
  return new Map(
    (service.volumes ?? []).map((v) => {
      const [source, target] = v.split(':');
      return [target!, source!];
    }),
  );
}

function flagValue(args: string[], flag: string): string | undefined {
  const at = args.indexOf(flag);
  return at >= 0 ? args[at + 1] : undefined;
}

describe('deploy/compose.yaml', () => {
  it('runs the llama-swap cuda image with only flags llama-swap has, watching its config, not published', () => {
    expect(LLAMA.image).toBe('ghcr.io/mostlygeek/llama-swap:cuda');
    expect(LLAMA.ports).toBeUndefined();
    const args = [...(LLAMA.entrypoint ?? []).slice(1), ...(LLAMA.command ?? [])];
    for (let n = 0; n < args.length; n++) {
      const flag = args[n]!;
      expect(LLAMA_SWAP_FLAGS.has(flag), `llama-swap has no flag ${flag}`).toBe(true);
      if (LLAMA_SWAP_FLAGS_WITH_VALUE.has(flag)) n++;
    }
    expect(args).toContain('-watch-config');
    expect(flagValue(args, '-config')).toBeDefined();
  });

  it('points Gatehouse at llama-swap by service name and port', () => {
    const upstream = new URL(GATEHOUSE.environment!.GATEHOUSE_UPSTREAM_URL!);
    expect(upstream.hostname).toBe('llama-swap');
    const listen = flagValue([...(LLAMA.command ?? [])], '-listen') ?? ':8080';
    expect(upstream.port).toBe(listen.split(':').at(-1));
  });

  it("gives Gatehouse llama-swap's own config file through one shared DIRECTORY mount", () => {
    const llamaConfig = flagValue([...(LLAMA.entrypoint ?? []), ...(LLAMA.command ?? [])], '-config')!;
    const editorFile = GATEHOUSE.environment!.INFERENCE_CONFIG_FILE!;
    expect(posix.isAbsolute(editorFile)).toBe(true);
    expect(posix.basename(editorFile)).toBe(posix.basename(llamaConfig));
    const llamaSource = mounts(LLAMA).get(posix.dirname(llamaConfig));
    const gatehouseSource = mounts(GATEHOUSE).get(posix.dirname(editorFile));
    expect(llamaSource, `llama-swap mounts no directory at ${posix.dirname(llamaConfig)}`).toBeDefined();
    expect(gatehouseSource).toBe(llamaSource);
    // Single-file bind mounts make the editor's atomic rename impossible.
    for (const service of [LLAMA, GATEHOUSE]) {
      for (const target of mounts(service).keys())
        expect(target, 'mount the directory, not config.yaml').not.toMatch(/\.ya?ml$/);
    }
  });

  it('sets only real settings, reads secrets from declared files, keeps /data, and outlasts the shutdown grace', () => {
    const env = GATEHOUSE.environment!;
    for (const name of Object.keys(env))
      expect(SETTING_NAMES.has(name), `environment ${name} is not a setting`).toBe(true);
    const secretPath = env.GATEHOUSE_ADMIN_PASSWORD_FILE!;
    const secretName = /^\/run\/secrets\/(.+)$/.exec(secretPath)?.[1];
    expect(GATEHOUSE.secrets).toContain(secretName);
    expect(COMPOSE.secrets?.[secretName!]?.file).toBeDefined();
    expect(mounts(GATEHOUSE).has(envPairs(FINAL_STAGE).get('GATEHOUSE_DATA_DIR')!)).toBe(true);
    expect(GATEHOUSE.ports).toEqual([`${settingDefault('PORT')}:${settingDefault('PORT')}`]);

    const grace = parseDuration(env.GATEHOUSE_SHUTDOWN_GRACE ?? settingDefault('GATEHOUSE_SHUTDOWN_GRACE'), 'grace');
    expect(parseDuration(GATEHOUSE.stop_grace_period!, 'stop_grace_period')).toBeGreaterThan(grace);
  });

  it('builds the repository Dockerfile', () => {
    const context = join(REPO_ROOT, 'deploy', GATEHOUSE.build!.context);
    expect(join(context, GATEHOUSE.build!.dockerfile)).toBe(join(REPO_ROOT, 'Dockerfile'));
  });
});

// ---- systemd ----------------------------------------------------------------------------------

/** `Key=value` lines of a unit file (repeated keys kept in order). */
function unitEntries(text: string): Array<[string, string]> {
  return text
    .split('\n')
    .filter((l) => /^[A-Za-z]+=/.test(l))
    .map((l) => {
      const at = l.indexOf('=');
      return [l.slice(0, at), l.slice(at + 1)];
    });
}
const UNIT_ENTRIES = unitEntries(UNIT);
const unitValue = (key: string): string | undefined => UNIT_ENTRIES.find(([k]) => k === key)?.[1];
const UNIT_ENV = new Map(
  UNIT_ENTRIES.filter(([k]) => k === 'Environment').map(([, v]) => v.split('=', 2) as [string, string]),
);

/** systemd time spans as used here: `45s`, `2min`, `1m 30s`, or bare seconds. */
function systemdSeconds(value: string): number {
  let total = 0;
  for (const m of value.matchAll(/(\d+)\s*(ms|s|min|m|h)?/g)) {
    const n = Number(m[1]);
    total += m[2] === 'ms' ? n / 1000 : m[2] === 'min' || m[2] === 'm' ? n * 60 : m[2] === 'h' ? n * 3600 : n;
  }
  return total;
}

describe('deploy/gatehouse.service', () => {
  it('starts `gatehouse serve` by running bin/gatehouse itself, as the Docker entry point does', () => {
    const exec = unitValue('ExecStart')!.split(/\s+/);
    const script = exec.findIndex((part) => part.endsWith('/bin/gatehouse'));
    expect(script, 'ExecStart runs bin/gatehouse').toBe(0);
    expectKnownInvocation(exec.slice(script + 1), 'ExecStart');
    expect(exec[script + 1]).toBe('serve');
    expect(unitValue('WorkingDirectory')).toBe(posix.dirname(posix.dirname(exec[script]!)));
  });

  it('sets only real settings, reads the rest from an EnvironmentFile, keeps data in its StateDirectory', () => {
    for (const name of UNIT_ENV.keys()) {
      if (name === 'NODE_ENV') continue;
      expect(SETTING_NAMES.has(name), `Environment=${name} is not a setting`).toBe(true);
    }
    expect(unitValue('EnvironmentFile')).toMatch(/^\/etc\/gatehouse\//);
    expect(UNIT_ENV.get('GATEHOUSE_DATA_DIR')).toBe(`/var/lib/${unitValue('StateDirectory')}`);
  });

  it('stops gracefully: SIGTERM, and more time than GATEHOUSE_SHUTDOWN_GRACE before SIGKILL', () => {
    expect(unitValue('KillSignal')).toBe('SIGTERM');
    const grace = parseDuration(
      UNIT_ENV.get('GATEHOUSE_SHUTDOWN_GRACE') ?? settingDefault('GATEHOUSE_SHUTDOWN_GRACE'),
      'grace',
    );
    expect(systemdSeconds(unitValue('TimeoutStopSec')!) * 1000).toBeGreaterThan(grace);
  });

  it('is hardened, without the option that breaks V8', () => {
    expect(unitValue('NoNewPrivileges')).toBe('yes');
    expect(unitValue('ProtectSystem')).toBe('strict');
    expect(unitValue('User')).not.toBe('root');
    expect(unitValue('MemoryDenyWriteExecute')).toBeUndefined();
  });
});

// ---- reverse proxies --------------------------------------------------------------------------

const HEADERS_TIMEOUT_MS = parseDuration(settingDefault('GATEHOUSE_HEADERS_TIMEOUT'), 'headers');
const IDLE_TIMEOUT_MS = parseDuration(settingDefault('GATEHOUSE_IDLE_TIMEOUT'), 'idle');
const BODY_LIMIT = parseSize(settingDefault('GATEHOUSE_BODY_LIMIT'), 'body');
const CONFIG_ROUTES = read('src/http/routes/config.ts');

describe('deploy/nginx.conf', () => {
  const directive = (name: string): string[] =>
    [...NGINX.matchAll(new RegExp(`^\\s*${name}\\s+([^;]+);`, 'gm'))].map((m) => m[1]!.trim());

  it('streams without buffering and waits longer than the gateway does', () => {
    expect(directive('proxy_buffering')).toEqual(['off']);
    expect(directive('proxy_request_buffering')).toEqual(['off']);
    expect(directive('proxy_http_version')).toEqual(['1.1']);
    const read = parseDuration(directive('proxy_read_timeout')[0]!, 'proxy_read_timeout');
    expect(read).toBeGreaterThan(HEADERS_TIMEOUT_MS);
    expect(read).toBeGreaterThan(IDLE_TIMEOUT_MS);
    expect(
      parseSize(`${directive('client_max_body_size')[0]!.replace(/m$/i, 'MiB')}`, 'client_max_body_size'),
    ).toBeGreaterThanOrEqual(BODY_LIMIT);
  });

  it('sets X-Forwarded-For, -Proto and -Host, and says to trust it', () => {
    const headers = directive('proxy_set_header').map((h) => h.split(/\s+/)[0]);
    expect(headers).toEqual(
      expect.arrayContaining(['X-Forwarded-For', 'X-Forwarded-Proto', 'X-Forwarded-Host', 'Host']),
    );
    expect(NGINX).toContain('GATEHOUSE_TRUSTED_PROXIES');
  });

  it('balances several replicas and sends the config editor to exactly one', () => {
    const upstreams = [...NGINX.matchAll(/upstream\s+(\S+)\s*\{([^}]*)\}/g)].map((m) => ({
      name: m[1]!,
      servers: [...m[2]!.matchAll(/^\s*server\s+/gm)].length,
    }));
    const editorUpstream = /location\s+\/api\/config\s*\{[^}]*proxy_pass\s+http:\/\/([^;\s]+);/.exec(NGINX)?.[1];
    expect(upstreams.find((u) => u.name === editorUpstream)?.servers).toBe(1);
    expect(upstreams.find((u) => u.name !== editorUpstream)!.servers).toBeGreaterThan(1);
    expect(CONFIG_ROUTES).toContain("'/api/config'");
  });
});

describe('deploy/Caddyfile', () => {
  const values = (name: string): string[] =>
    [...CADDYFILE.matchAll(new RegExp(`^\\s*${name}\\s+(\\S+)`, 'gm'))].map((m) => m[1]!);
  const caddyMs = (v: string): number => parseDuration(v, 'Caddy duration');

  it('flushes immediately and waits longer than the gateway does', () => {
    expect(values('flush_interval').length).toBeGreaterThanOrEqual(2);
    expect(new Set(values('flush_interval'))).toEqual(new Set(['-1']));
    for (const name of ['read_timeout', 'response_header_timeout']) {
      const found = values(name);
      expect(found.length, name).toBeGreaterThan(0);
      for (const v of found) expect(caddyMs(v), `${name} ${v}`).toBeGreaterThan(HEADERS_TIMEOUT_MS);
    }
    expect(values('max_size').map((v) => parseSize(v, 'max_size'))).toEqual([expect.any(Number)]);
    expect(parseSize(values('max_size')[0]!, 'max_size')).toBeGreaterThanOrEqual(BODY_LIMIT);
  });

  it('probes /healthz, balances several replicas, and routes the config editor to one', () => {
    expect(values('health_uri')).toEqual(['/healthz']);
    const pools = [...CADDYFILE.matchAll(/reverse_proxy\s+([^{\n]+)\{/g)].map((m) => m[1]!.trim().split(/\s+/));
    expect(pools.map((p) => p.length).sort()).toEqual([1, 3]);
    expect(CADDYFILE).toMatch(/@config_editor path \/api\/config \/api\/config\/\*/);
    expect(CADDYFILE).toContain('GATEHOUSE_TRUSTED_PROXIES');
  });
});

// ---- every file together ----------------------------------------------------------------------

describe('names and commands across the deployment files', () => {
  const FILES: Record<string, string> = {
    Dockerfile: DOCKERFILE,
    'deploy/compose.yaml': COMPOSE_TEXT,
    'deploy/gatehouse.service': UNIT,
    'deploy/nginx.conf': NGINX,
    'deploy/Caddyfile': CADDYFILE,
    'docs/deployment.md': DEPLOYMENT_DOC,
  };

  it('use only GATEHOUSE_*/INFERENCE_* names that are settings (or their _FILE forms)', () => {
    for (const [file, text] of Object.entries(FILES)) {
      const names = new Set([...text.matchAll(/\b(?:GATEHOUSE|INFERENCE)_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => m[0]));
      for (const name of names) expect(SETTING_NAMES.has(name), `${file}: ${name} is not a setting`).toBe(true);
    }
  });

  it('run only gatehouse commands the CLI knows', () => {
    let checked = 0;
    for (const [file, text] of Object.entries(FILES)) {
      const invocations = [
        ...text.matchAll(/bin\/gatehouse((?:\s+[a-z][\w-]*|\s+--?[\w-]+(?:=\S+)?)+)/g),
        ...text.matchAll(/`gatehouse((?:\s+[a-z][\w-]*)+)/g),
        ...text.matchAll(/\brun\s+(?:--[\w-]+\s+)*gatehouse((?:\s+[a-z][\w-]*)+)/g),
      ];
      for (const m of invocations) {
        expectKnownInvocation(m[1]!.trim().split(/\s+/), `${file}: "${m[0]}"`);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(5);
  });

  it('name the SQLite file the store really uses', () => {
    expect(DEPLOYMENT_DOC).toContain(`<GATEHOUSE_DATA_DIR>/${SQLITE_FILE_NAME}`);
    expect(DEPLOYMENT_DOC).toContain(`sqlite3 data/${SQLITE_FILE_NAME} ".backup`);
  });

  it('are linked from the README and the configuration reference', () => {
    expect(read('README.md')).toContain('docs/deployment.md');
    expect(read('docs/configuration.md')).toContain('docs/deployment.md');
    for (const file of [
      'Dockerfile',
      '.dockerignore',
      'deploy/compose.yaml',
      'deploy/gatehouse.service',
      'deploy/nginx.conf',
      'deploy/Caddyfile',
    ]) {
      expect(DEPLOYMENT_DOC, file).toContain(file.startsWith('deploy/') ? file : basename(file));
      expect(statSync(join(REPO_ROOT, file)).isFile()).toBe(true);
    }
  });
});
