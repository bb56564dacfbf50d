/**
 * `npm run demo`: the bundled llama-swap simulator plus the gateway in front of it, so a
 * newcomer can try every feature without a GPU. Settings come from the environment as for
 * `npm start`, except that the upstream is the simulator.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway } from '../src/main.js';
import { loadSettings, parsePort, SettingsError } from '../src/settings.js';
import { DEMO_CONFIG, DEMO_KNOBS } from '../test/fakes/llama-swap/demo-config.js';
import { startSimulator } from '../test/fakes/llama-swap/index.js';
import { demoBanner } from './banner.js';

async function demo(): Promise<void> {
  const simulatorPort = process.env.DEMO_SIMULATOR_PORT;
  const simulator = await startSimulator({
    host: '127.0.0.1',
    port: simulatorPort === undefined ? 0 : parsePort(simulatorPort, 'DEMO_SIMULATOR_PORT'),
    config: DEMO_CONFIG,
    knobs: DEMO_KNOBS,
  });

  const dataDir = process.env.GATEHOUSE_DATA_DIR ?? join(process.cwd(), 'data', 'demo');
  mkdirSync(dataDir, { recursive: true });
  const env: NodeJS.ProcessEnv = { ...process.env, GATEHOUSE_UPSTREAM_URL: simulator.url, GATEHOUSE_DATA_DIR: dataDir };
  const settings = loadSettings(env);
  const gateway = await startGateway(settings);
  const local = gateway.url.replace('0.0.0.0', 'localhost');

  process.stdout.write(demoBanner({ gateway: local, simulator: simulator.url, setupLink: gateway.setupLink }));

  let stopping = false;
  const stop = () => {
    if (stopping) process.exit(1);
    stopping = true;
    void gateway
      .stop()
      .then(() => simulator.close())
      .then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

demo().catch((error: unknown) => {
  process.stderr.write(
    `demo: ${error instanceof SettingsError ? error.message : String((error as Error)?.stack ?? error)}\n`,
  );
  process.exit(1);
});
