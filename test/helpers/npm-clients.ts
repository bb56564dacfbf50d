/**
 * Command-line clients that install from npm but are not dependencies of the project (coding
 * agents): each pinned version is installed once into a cache directory with `npm install
 * --prefix` and reused from there. When it cannot be installed (offline, registry error), the
 * answer says why, so the caller can skip with that reason.
 */
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { run } from './programs.js';

export interface NpmClient {
  /** The npm package, e.g. `@openai/codex`. */
  pkg: string;
  /** An exact version: the matrix tests one known release, not whatever is newest. */
  version: string;
  /** The executable the package puts in `node_modules/.bin`. */
  bin: string;
}

export type Installed = { ok: true; bin: string } | { ok: false; reason: string };

/** Where the clients are kept between runs; `GATEHOUSE_TEST_CLIENTS_DIR` moves it. */
const CLIENTS_CACHE = process.env.GATEHOUSE_TEST_CLIENTS_DIR ?? join(homedir(), '.cache', 'gatehouse-test-clients');

const INSTALL_TIMEOUT_MS = 240_000;

function cacheDir(client: NpmClient): string {
  return join(CLIENTS_CACHE, `${client.pkg.replace(/^@/, '').replace('/', '+')}@${client.version}`);
}

function installedVersion(dir: string, client: NpmClient): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, 'node_modules', client.pkg, 'package.json'), 'utf8')) as {
      version?: string;
    };
    return manifest.version;
  } catch {
    return undefined;
  }
}

/** The client's executable, installing it into the cache first when it is not there yet. */
export async function installNpmClient(client: NpmClient): Promise<Installed> {
  const dir = cacheDir(client);
  const bin = join(dir, 'node_modules', '.bin', client.bin);
  if (installedVersion(dir, client) === client.version && existsSync(bin)) return { ok: true, bin };
  // Installed beside the final place, then renamed: a cut-off install never looks complete.
  const staging = `${dir}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const spec = `${client.pkg}@${client.version}`;
  const result = await run(
    'npm',
    ['install', '--prefix', staging, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', spec],
    { env: { ...process.env } as Record<string, string>, timeoutMs: INSTALL_TIMEOUT_MS },
  ).catch((error: unknown) => ({ code: null, stderr: String(error), timedOut: false }));
  if (result.code !== 0) {
    rmSync(staging, { recursive: true, force: true });
    const errors = result.stderr.split('\n').filter((l) => l.startsWith('npm error') && !l.includes('complete log'));
    const why = result.timedOut
      ? `timed out after ${INSTALL_TIMEOUT_MS / 1000} s`
      : (errors.find((l) => l.includes('request to')) ?? errors[0] ?? `exit ${String(result.code)}`);
    return { ok: false, reason: `npm install ${spec} failed (no registry access?): ${why}` };
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return existsSync(bin) ? { ok: true, bin } : { ok: false, reason: `${spec} installed no ${client.bin} executable` };
}
