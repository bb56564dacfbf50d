/**
 * Run the simulator by hand or from `npm run demo`:
 *   node --import tsx test/fakes/llama-swap/cli.ts --port 8080 [--host 127.0.0.1] [--config file.yaml]
 *     [--watch-config] [--load-delay 1500ms] [--tokens 8] [--tps 20] [--api-key KEY]
 * Without --config it serves DEMO_CONFIG. SIGHUP reloads the config, as llama-swap does.
 */
import { parseArgs } from 'node:util';
import { DEMO_CONFIG, startSimulator } from './index.js';
import type { Knobs } from './types.js';

function parseDurationMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new Error(`invalid duration: ${text} (use e.g. 1500ms, 2s)`);
  const value = Number(m[1]);
  return m[2] === 's' ? value * 1000 : m[2] === 'm' ? value * 60_000 : value;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      config: { type: 'string' },
      'watch-config': { type: 'boolean', default: false },
      'load-delay': { type: 'string' },
      tokens: { type: 'string' },
      tps: { type: 'string' },
      'api-key': { type: 'string', multiple: true },
    },
  });
  const knobs: Partial<Knobs> = {};
  if (values['load-delay'] !== undefined) knobs.loadDelayMs = parseDurationMs(values['load-delay']);
  if (values.tokens !== undefined) knobs.tokens = Number(values.tokens);
  if (values.tps !== undefined) knobs.tokensPerSecond = Number(values.tps);
  if (values['api-key'] !== undefined) knobs.apiKeys = values['api-key'];

  const sim = await startSimulator({
    host: values.host,
    port: Number(values.port),
    ...(values.config ? { configFile: values.config } : { config: { ...DEMO_CONFIG } }),
    watchConfig: values['watch-config'],
    knobs,
  });
  process.stdout.write(`llama-swap simulator listening on ${sim.url}\n`);

  process.on('SIGHUP', () => void sim.reload());
  const stop = () => {
    void sim.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`llama-swap simulator: ${(err as Error).message}\n`);
  process.exit(1);
});
