/**
 * The `gatehouse` command. `serve` runs the gateway; `keys` manages API keys and `backup` copies
 * the SQLite store (both also while the server runs). Flags mirror the environment variables
 * listed in docs/configuration.md.
 */
import { parseArgs } from 'node:util';
import { loadSettings, SETTINGS, SettingsError, type FlagValues } from '../settings/index.js';
import { DataDirLockedError } from '../store/data-dir-lock.js';

const USAGE = `Usage: gatehouse <command> [options]

Commands:
  serve                 run the gateway
  keys <subcommand>     manage API keys (create, list, update, revoke, delete); see: gatehouse keys --help
  backup <file>         copy the SQLite store to <file> while the server runs; see: gatehouse backup --help

Options for serve:
${SETTINGS.filter((s) => s.flag)
  .map((s) => `  ${`${s.flag} <value>`.padEnd(22)}${s.description} (env ${s.env}, default ${s.default ?? 'unset'})`)
  .join('\n')}
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve': {
        const flags = parseFlags(rest);
        const { serve } = await import('../main.js');
        await serve(loadSettings(process.env, flags));
        return -1; // keeps running
      }
      case 'keys': {
        const { runKeysCommand } = await import('./keys.js');
        const settings = loadSettings(process.env, {});
        return await runKeysCommand(
          rest,
          { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, isTTY: Boolean(process.stdin.isTTY) },
          settings,
        );
      }
      case 'backup': {
        const { runBackupCommand } = await import('./backup.js');
        return await runBackupCommand(
          rest,
          { stdout: process.stdout, stderr: process.stderr },
          loadSettings(process.env, {}),
        );
      }
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        process.stderr.write(`gatehouse: unknown command "${command}"\n\n${USAGE}`);
        return 2;
    }
  } catch (error) {
    if (error instanceof SettingsError) {
      process.stderr.write(`gatehouse: ${error.message}\n`);
      return 2;
    }
    if (error instanceof DataDirLockedError) {
      process.stderr.write(`gatehouse: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

function parseFlags(args: string[]): FlagValues {
  const options: Record<string, { type: 'string' }> = {};
  for (const spec of SETTINGS) if (spec.flag) options[spec.flag.slice(2)] = { type: 'string' };
  try {
    const { values } = parseArgs({ args, options, allowPositionals: false, strict: true });
    const flags: FlagValues = {};
    for (const [name, value] of Object.entries(values)) if (typeof value === 'string') flags[`--${name}`] = value;
    return flags;
  } catch (error) {
    throw new SettingsError((error as Error).message);
  }
}
