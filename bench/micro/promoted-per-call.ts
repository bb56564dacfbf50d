/**
 * How much of each proxied call outlives a young-generation collection: the gateway (keyed,
 * recording on) serves calls one at a time while V8's sampling heap profiler counts the bytes
 * that were promoted to the old generation (or are still alive), with their allocation sites.
 * Objects kept alive past their call turn young collections into copying work and old-generation
 * growth, which shows up as tail latency (docs/decisions/0002-queue-place-without-closures.md).
 * Run: `npm run build && node dist/bench/micro/promoted-per-call.js [OTHER_CHECKOUT]` (bounded: 6,000 calls).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProcessGroup, runGatehouse } from '../processes.js';

const WARMUP_CALLS = 1000;
const MEASURED_CALLS = 5000;
const here = fileURLToPath(new URL('.', import.meta.url));
const checkout = resolve(process.argv[2] ?? join(here, '../../..'));
const bin = join(checkout, 'bin', 'gatehouse');

interface SampleNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SampleNode[];
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-micro-'));
const group = new ProcessGroup();
try {
  const samples = join(dir, 'samples.json');
  const created = await runGatehouse(['keys', 'create', '--name', 'micro', '--quiet'], dir, {}, bin);
  const key = created.stdout.trim();
  if (created.code !== 0 || key === '') throw new Error(`gatehouse keys create failed: ${created.stderr}`);
  const upstream = await group.startBenchServer('upstream', './upstream-server.js');
  const gateway = await group.startGateway('gateway', {
    upstreamUrl: upstream.url,
    dataDir: dir,
    env: { HEAP_SAMPLES_OUT: samples },
    nodeArgs: ['--import', join(here, 'heap-sampling-hook.js')],
    bin,
  });
  const url = gateway.url;
  const call = async (): Promise<void> => {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"model":"bench","messages":[{"role":"user","content":"hi"}]}',
    });
    if (res.status !== 200) throw new Error(`the gateway answered ${res.status}`);
    await res.arrayBuffer();
  };
  for (let i = 0; i < WARMUP_CALLS; i++) await call();
  process.kill(gateway.pid, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, 200));
  for (let i = 0; i < MEASURED_CALLS; i++) await call();
  process.kill(gateway.pid, 'SIGUSR2');
  let profile: { head: SampleNode } | undefined;
  for (let i = 0; i < 50 && !profile; i++) {
    await new Promise((r) => setTimeout(r, 200));
    try {
      profile = JSON.parse(readFileSync(samples, 'utf8')) as { head: SampleNode };
    } catch {
      profile = undefined;
    }
  }
  if (!profile) throw new Error('the gateway wrote no heap samples');
  const sites = new Map<string, number>();
  let total = 0;
  const walk = (node: SampleNode): void => {
    const { functionName, url: file, lineNumber } = node.callFrame;
    const site = `${functionName || '(anonymous)'} ${file.replace(/.*\/(node_modules|dist)\//, '')}:${lineNumber}`;
    total += node.selfSize;
    if (node.selfSize > 0) sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    node.children.forEach(walk);
  };
  walk(profile.head);
  console.log(`${checkout}: ${MEASURED_CALLS} calls at one connection, keyed, recording on`);
  console.log(`outlived a young collection: ${(total / MEASURED_CALLS / 1024).toFixed(2)} KiB per call`);
  for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, 8))
    console.log(`  ${(bytes / MEASURED_CALLS / 1024).toFixed(2).padStart(7)} KiB  ${site}`);
} finally {
  await group.stopAll();
  rmSync(dir, { recursive: true, force: true });
}
