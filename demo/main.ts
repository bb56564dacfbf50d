/**
 * `npm run demo`: the bundled llama-swap simulator plus the gateway in front of it, so a
 * newcomer can try every feature without a GPU. Settings come from the environment as for
 * `npm start`, except that the upstream is the simulator. `DEMO_UPSTREAM=llama-server` plays
 * llama.cpp's router mode instead (test/fakes/llama-server-router).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway } from '../src/main.js';
import { loadSettings, parsePort, SettingsError } from '../src/settings/index.js';
import { DEMO_CONFIG, DEMO_KNOBS } from '../test/fakes/llama-swap/demo-config.js';
import { startSimulator } from '../test/fakes/llama-swap/index.js';
import { ROUTER_DEMO } from '../test/fakes/llama-server-router/demo-models.js';
import { startRouterSimulator } from '../test/fakes/llama-server-router/index.js';
import { demoBanner } from './banner.js';

type DemoUpstream = 'llama-swap' | 'llama-server';

async function startUpstream(kind: DemoUpstream): Promise<{ url: string; close(): Promise<void> }> {
  const simulatorPort = process.env.DEMO_SIMULATOR_PORT;
  const port = simulatorPort === undefined ? 0 : parsePort(simulatorPort, 'DEMO_SIMULATOR_PORT');
  if (kind === 'llama-server') return startRouterSimulator({ ...ROUTER_DEMO, host: '127.0.0.1', port });
  return startSimulator({ host: '127.0.0.1', port, config: DEMO_CONFIG, knobs: DEMO_KNOBS });
}

function demoUpstream(raw: string | undefined): DemoUpstream {
  if (raw === undefined || raw === 'llama-swap' || raw === 'llama-server') return raw ?? 'llama-swap';
  throw new SettingsError(`DEMO_UPSTREAM: "${raw}" is not one of llama-swap, llama-server`);
}

async function demo(): Promise<void> {
  const upstream = demoUpstream(process.env.DEMO_UPSTREAM);
  const simulator = await startUpstream(upstream);

  const dataDir = process.env.GATEHOUSE_DATA_DIR ?? join(process.cwd(), 'data', 'demo');
  mkdirSync(dataDir, { recursive: true });
  const env: NodeJS.ProcessEnv = { ...process.env, GATEHOUSE_UPSTREAM_URL: simulator.url, GATEHOUSE_DATA_DIR: dataDir };
  const settings = loadSettings(env);
  const gateway = await startGateway(settings);
  const local = gateway.url.replace('0.0.0.0', 'localhost');

  process.stdout.write(
    demoBanner({ gateway: local, simulator: simulator.url, setupLink: gateway.setupLink, upstream }),
  );

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
