/**
 * The swap-aware queue on a mixed workload: two clients, one calling model A and one model B, make
 * 20 calls each with `IN_FLIGHT` at a time (so their calls arrive interleaved), through Gatehouse in
 * front of the llama-swap simulator, which holds one model at a time and takes `LOAD_MS` to load
 * one. Reports the model loads (swaps) and the p95 and longest call, for three ways of admitting:
 *   llama-swap FIFO  no Gatehouse cap: every call goes to llama-swap, which serves in arrival order
 *   arrival order    GATEHOUSE_MAX_INFLIGHT=1, GATEHOUSE_SWAP_FAIRNESS=0ms (waiting calls in FIFO order)
 *   swap-aware       GATEHOUSE_MAX_INFLIGHT=1, GATEHOUSE_SWAP_FAIRNESS=30s (the loaded model first)
 * Loopback only, bounded: 40 calls per run. Run: `npm run build && node dist/bench/swap-workload.js`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '../test/fakes/llama-swap/index.js';
import { ProcessGroup } from './processes.js';

const CALLS_PER_CLIENT = 20;
const IN_FLIGHT = 4;
const LOAD_MS = 300;
const MODELS = ['model-a', 'model-b'] as const;

interface Mode {
  name: string;
  env: Record<string, string>;
}

const MODES: Mode[] = [
  { name: 'llama-swap FIFO', env: {} },
  { name: 'arrival order', env: { GATEHOUSE_MAX_INFLIGHT: '1', GATEHOUSE_SWAP_FAIRNESS: '0ms' } },
  { name: 'swap-aware', env: { GATEHOUSE_MAX_INFLIGHT: '1', GATEHOUSE_SWAP_FAIRNESS: '30s' } },
];

async function call(url: string, model: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${model}: HTTP ${res.status}`);
  return performance.now() - started;
}

async function run(mode: Mode): Promise<{ loads: number; p95: number; max: number; totalMs: number }> {
  const sim = await startSimulator({
    config: {
      models: Object.fromEntries(MODELS.map((id) => [id, { cmd: `llama-server --port \${PORT} -m /m/${id}.gguf` }])),
    },
    knobs: { loadDelayMs: LOAD_MS, tokensPerSecond: 200, tokens: 4 },
  });
  const processes = new ProcessGroup();
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-swap-bench-'));
  try {
    const gateway = await processes.startGateway(mode.name, {
      upstreamUrl: sim.url,
      dataDir,
      env: mode.env,
      nodeArgs: [],
    });
    const client = async (model: string): Promise<number[]> => {
      const times: number[] = [];
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < CALLS_PER_CLIENT) {
          next++;
          times.push(await call(gateway.url, model));
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
      return times;
    };
    const started = performance.now();
    const times = (await Promise.all(MODELS.map(client))).flat().sort((a, b) => a - b);
    const totalMs = performance.now() - started;
    const loads = (sim.logHistory('proxy').match(/Executing start command/g) ?? []).length;
    return { loads, p95: times[Math.floor(times.length * 0.95)]!, max: times[times.length - 1]!, totalMs };
  } finally {
    await processes.stopAll();
    await sim.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

console.log(
  `Two clients (${MODELS.join(', ')}), ${CALLS_PER_CLIENT} calls each, ${IN_FLIGHT} at a time; one model ` +
    `loaded at a time, ${LOAD_MS} ms per load`,
);
const header = ['admission'.padEnd(18), 'loads'.padStart(6), 'p95 call ms'.padStart(12), 'max ms'.padStart(8)];
console.log([...header, 'all done ms'.padStart(12)].join(' '));
for (const mode of MODES) {
  const { loads, p95, max, totalMs } = await run(mode);
  const cells = [
    mode.name.padEnd(18),
    String(loads).padStart(6),
    p95.toFixed(0).padStart(12),
    max.toFixed(0).padStart(8),
  ];
  console.log([...cells, totalMs.toFixed(0).padStart(12)].join(' '));
}
