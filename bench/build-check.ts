/**
 * Which code the numbers describe. The bench runs the compiled gateway in dist/: a source file
 * edited after the last build means the numbers would describe old code, so the bench says so
 * before it starts; and the report names the commit (and whether src/ had local changes).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function newestMtimeMs(dir: string, depth = 0): number {
  if (depth > 8) return 0;
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtimeMs(path, depth + 1));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** A warning when src/ or bench/ changed after dist/ was built, else undefined. */
export function staleBuildWarning(): string | undefined {
  try {
    const built = Math.min(
      statSync(join(ROOT, 'dist/src/app.js')).mtimeMs,
      statSync(join(ROOT, 'dist/bench/main.js')).mtimeMs,
    );
    const edited = Math.max(newestMtimeMs(join(ROOT, 'src')), newestMtimeMs(join(ROOT, 'bench')));
    return edited > built
      ? 'src/ or bench/ changed after the last build: run `npm run build` first, or these numbers describe old code'
      : undefined;
  } catch {
    return undefined;
  }
}

/** `abc1234` or `abc1234 + local changes in src/`; undefined outside a git checkout. */
export function codeVersion(): string | undefined {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 5000,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    const commit = git('rev-parse', '--short', 'HEAD');
    return git('status', '--porcelain', '--', 'src') ? `${commit} + local changes in src/` : commit;
  } catch {
    return undefined;
  }
}
