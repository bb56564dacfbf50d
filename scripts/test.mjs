// `npm test`: the lint and the whole Vitest suite side by side. Vitest's browser and process
// tests leave a core idle much of the time, and the lint fills it; run one after the other, the
// lint alone adds a minute and a half. Vitest's output streams; the lint's prints when it ends.
// Fails when either fails; arguments go to Vitest.
import { spawn } from 'node:child_process';

function run(command, args, { buffered }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      stdio: ['ignore', buffered ? 'pipe' : 'inherit', buffered ? 'pipe' : 'inherit'],
    });
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    child.on('close', (code, signal) => resolve({ ok: code === 0, code: code ?? signal, output }));
  });
}

const [lint, tests] = await Promise.all([
  run(process.execPath, ['scripts/lint.mjs'], { buffered: true }),
  run(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)], { buffered: false }),
]);
process.stdout.write(`\n== npm run lint: ${lint.ok ? 'ok' : `failed (${lint.code})`}\n${lint.output}`);
if (!tests.ok) process.stdout.write(`== vitest run: failed (${tests.code})\n`);
process.exit(lint.ok && tests.ok ? 0 : 1);
