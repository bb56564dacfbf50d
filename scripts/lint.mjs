// `npm run lint`: ESLint, Prettier's check, knip and tsc (gateway, dashboard) side by side (each is mostly one core),
// each one's output printed whole when it ends; fails when any of them fails.
import { spawn } from 'node:child_process';

const CHECKS = [
  ['eslint', ['.']],
  ['prettier', ['--check', '.']],
  ['knip', []],
  ['tsc', ['-p', 'tsconfig.json', '--noEmit']],
  ['tsc', ['-p', 'web/tsconfig.json', '--noEmit']],
  ['tsc', ['-p', 'web/tsconfig.node.json', '--noEmit']],
];

const results = await Promise.all(
  CHECKS.map(
    ([command, args]) =>
      new Promise((resolve) => {
        const child = spawn('npx', ['--no-install', command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (chunk) => (output += chunk));
        child.stderr.on('data', (chunk) => (output += chunk));
        child.on('close', (code) => {
          process.stdout.write(`== ${command} ${args.join(' ')}: ${code === 0 ? 'ok' : `failed (${code})`}\n${output}`);
          resolve(code === 0);
        });
      }),
  ),
);
process.exit(results.every(Boolean) ? 0 : 1);
