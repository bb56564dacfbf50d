/**
 * `npm run bench`: starts the upstream, the floor proxy and one gateway per scenario as
 * separate processes on 127.0.0.1, runs the selected suites against all of them in
 * alternating rounds, prints the report (progress goes to stderr) and stops every child,
 * also on error and Ctrl-C. See docs/benchmarks.md.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { judgeBars, type RssEntry } from './bars.js';
import { codeVersion, staleBuildWarning } from './build-check.js';
import { measureIdleStreams } from './idle-streams.js';
import { judgeWarnings, medianReport, readReport } from './judge.js';
import { busyShareWhileIdle, startForeignCpuMeter } from './machine.js';
import { createLoadDriver, type LoadDriver } from './load.js';
import {
  requestFor,
  runLoadCell,
  runOpenLoopCell,
  warmUpTargets,
  type LoadCellResult,
  type Workload,
} from './load-suite.js';
import { HELP, parseOptions, UsageError, type BenchOptions } from './options.js';
import { ProcessGroup, runGatehouse, type RunningProcess } from './processes.js';
import { runPacedSuite, type PacedResult } from './paced-suite.js';
import { renderReport, type BenchReport } from './report.js';
import { JUDGED_SCENARIO, selectScenarios, type Scenario, type ScenarioSelection } from './scenarios.js';
import { checkTargets } from './smoke.js';
import { byKind, type Target } from './targets.js';

const GATEWAY_BUILD = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const benchStartedAt = performance.now();

function progress(line: string): void {
  process.stderr.write(`[bench ${((performance.now() - benchStartedAt) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
}

interface Started {
  targets: Target[];
  /** Starts another process like the target's (same settings, own data dir), for measurements that need a fresh one. */
  startFresh(target: Target): Promise<Target>;
}

/** A scenario's cleanup (e.g. dropping its PostgreSQL schema) may take this long before the bench gives up on it. */
const SCENARIO_CLEANUP_TIMEOUT_MS = 20_000;

async function runCleanups(cleanups: ReadonlyArray<{ id: string; run: () => Promise<void> }>): Promise<void> {
  for (const { id, run } of cleanups) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${SCENARIO_CLEANUP_TIMEOUT_MS} ms`)),
        SCENARIO_CLEANUP_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([run(), timeout]);
      progress(`cleaned up after scenario ${id}`);
    } catch (error) {
      progress(`WARNING: cleaning up after scenario ${id} failed: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

async function startTargets(
  options: BenchOptions,
  selection: ScenarioSelection,
  group: ProcessGroup,
  workDir: string,
  cleanups: Array<{ id: string; run: () => Promise<void> }>,
): Promise<Started> {
  const upstream = await group.startBenchServer('upstream', './upstream-server.js');
  const startFloor = () => group.startBenchServer('floor', './floor-proxy.js', [upstream.url]);
  const floor = await startFloor();
  const targets: Target[] = [
    { id: 'direct', label: 'direct', kind: 'direct', url: upstream.url, pid: upstream.pid, headers: {} },
    { id: 'floor', label: 'floor', kind: 'floor', url: floor.url, pid: floor.pid, headers: {} },
  ];
  const starters = new Map<string, () => Promise<Target>>([
    ['floor', async () => ({ ...targets[1]!, ...pick(await startFloor()) })],
  ]);
  const nodeArgs = options.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(options.cpuProfDir)}`] : [];
  let copies = 0;
  // Each gateway process gets its own data dir, prepared anew (a SQLite data dir has one server).
  const startGateway = async (scenario: Scenario): Promise<Target> => {
    const dataDir = join(workDir, `data-${scenario.id}-${++copies}`);
    mkdirSync(dataDir, { recursive: true });
    const extra = await scenario.prepare?.({
      dataDir,
      runGatehouse: (args) => runGatehouse(args, dataDir, scenario.gatewayEnv, scenario.bin),
    });
    if (extra?.cleanup) cleanups.push({ id: scenario.id, run: extra.cleanup });
    const headers = { ...scenario.requestHeaders, ...extra?.requestHeaders };
    const gateway = await group.startGateway(`gateway ${scenario.id}`, {
      upstreamUrl: upstream.url,
      dataDir,
      env: { ...scenario.gatewayEnv, ...extra?.gatewayEnv },
      nodeArgs,
      bin: scenario.bin,
    });
    await extra?.check?.({ url: gateway.url, headers });
    const id = `gateway:${scenario.id}`;
    return { id, label: `gateway ${scenario.id}`, kind: 'gateway', ...pick(gateway), headers, scenarioId: scenario.id };
  };
  for (const scenario of selection.scenarios) {
    const gateway = await startGateway(scenario);
    starters.set(gateway.id, () => startGateway(scenario));
    targets.push(gateway);
    progress(`started ${gateway.label} (pid ${gateway.pid}) at ${gateway.url}`);
  }
  progress(`started upstream (pid ${upstream.pid}) at ${upstream.url}, floor (pid ${floor.pid}) at ${floor.url}`);
  return {
    targets,
    startFresh(target) {
      const start = starters.get(target.id);
      if (!start) throw new Error(`no fresh copy of ${target.id} can be started`);
      return start();
    },
  };
}

const pick = ({ url, pid }: RunningProcess) => ({ url, pid });

/** Seconds of JSON and of SSE calls a freshly started target serves before its idle-stream RSS is read. */
const IDLE_RSS_WARMUP_SECONDS = 0.2;

/** Calls at 10 connections, JSON then SSE, then a pause long enough for the gateway's usage writer to write them. */
async function serveFor(driver: LoadDriver, target: Target, seconds: number): Promise<void> {
  for (const workload of ['json', 'sse'] as const)
    await driver.run(target.url, requestFor(workload, target.headers), 10, seconds / 2);
  await new Promise((resolve) => setTimeout(resolve, 1500));
}

async function runSuites(
  options: BenchOptions,
  driver: LoadDriver,
  started: Started,
): Promise<Pick<BenchReport, 'load' | 'paced' | 'rss'>> {
  const { profile, suites } = options;
  const { targets } = started;
  if (suites.has('json') || suites.has('rate') || suites.has('sse') || suites.has('paced'))
    await warmUpTargets(driver, targets, profile.jitWarmupSeconds, progress);
  const load: LoadCellResult[] = [];
  const closedLoop = async (workload: Workload) => {
    if (suites.has(workload))
      for (const connections of profile.connections)
        load.push(await runLoadCell(driver, targets, workload, connections, profile, progress));
  };
  await closedLoop('json');
  if (suites.has('rate')) load.push(await runOpenLoopCell(targets, profile, progress));
  await closedLoop('sse');
  let paced: PacedResult | undefined;
  if (suites.has('paced')) paced = await runPacedSuite(targets, profile, progress);
  const rss: RssEntry[] = [];
  if (suites.has('rss')) {
    // Freshly started processes carry the bar, so the result does not depend on which suites ran
    // before; each first serves calls for a moment, as any gateway in use has. The judged gateway
    // is measured in several fresh processes (the bar takes their median: what V8 happens to
    // compile while serving moves one process's RSS). The gateways that ran the load are context.
    const subjects: Array<{ target: Target; fresh: boolean }> = [];
    for (const target of [...byKind(started.targets, 'floor'), ...byKind(started.targets, 'gateway')]) {
      const copies = target.scenarioId === JUDGED_SCENARIO ? profile.idleRssProcesses : 1;
      for (let copy = 0; copy < copies; copy++) {
        const fresh = await started.startFresh(target);
        progress(
          `idle streams: ${target.label} (fresh, pid ${fresh.pid}) serves calls for ${IDLE_RSS_WARMUP_SECONDS} s first`,
        );
        await serveFor(driver, fresh, IDLE_RSS_WARMUP_SECONDS);
        subjects.push({ target: fresh, fresh: true });
      }
      if (target.kind === 'gateway' && (suites.has('json') || suites.has('sse')))
        subjects.push({ target, fresh: false });
    }
    for (const { target, fresh } of subjects) {
      const state = fresh ? 'fresh, served' : 'after load';
      progress(`idle streams: opening ${profile.idleStreams} through ${target.label} (${state}, pid ${target.pid})`);
      const result = await measureIdleStreams(target, profile.idleStreams, { settle: fresh });
      const settledNote =
        result.rssSettledBytes === undefined
          ? ''
          : `, settled ${(result.rssSettledBytes / 1e6).toFixed(1)} MB after ` +
            `${((result.settledAfterMs ?? 0) / 1000).toFixed(0)} s more`;
      progress(
        `idle streams: ${result.open} open through ${target.label} (${state}), RSS ` +
          `${((result.rssWithStreamsBytes ?? Number.NaN) / 1e6).toFixed(1)} MB 1 s after${settledNote}`,
      );
      rss.push({ targetId: target.id, fresh, ...result });
    }
  }
  return { load, paced, rss };
}

/** --judge: prints the median of saved runs with the bars judged on it; runs nothing. */
function judgeRuns(files: readonly string[]): number {
  const reports = files.map(readReport);
  for (const warning of judgeWarnings(reports, files)) progress(`WARNING: ${warning}`);
  process.stdout.write(renderReport(medianReport(reports, files)));
  return 0;
}

async function main(argv: string[]): Promise<number> {
  let options: BenchOptions | 'help';
  try {
    options = parseOptions(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`bench: ${error.message}\n\n${HELP}`);
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (options.judge) return judgeRuns(options.judge);
  if (!existsSync(GATEWAY_BUILD)) {
    process.stderr.write(`bench: ${GATEWAY_BUILD} is missing; run \`npm run build\` first\n`);
    return 2;
  }

  const stale = staleBuildWarning();
  if (stale) progress(`WARNING: ${stale}`);
  const driver = createLoadDriver(options.engine);
  const group = new ProcessGroup();
  const workDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  // Scenario cleanups (a PostgreSQL schema to drop) run once every gateway has stopped.
  const scenarioCleanups: Array<{ id: string; run: () => Promise<void> }> = [];
  let cleaned: Promise<void> | undefined;
  const cleanup = () =>
    (cleaned ??= group
      .stopAll()
      .then(() => runCleanups(scenarioCleanups))
      .finally(() => rmSync(workDir, { recursive: true, force: true })));
  // Last resort when something calls process.exit first: no waiting is possible there.
  process.once('exit', () => {
    group.killAllNow();
    rmSync(workDir, { recursive: true, force: true });
  });
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130); // a second Ctrl-C: the 'exit' hook kills the children at once
    stopping = true;
    progress(`${signal}: stopping the child processes`);
    driver.stop();
    void cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    const startedAt = new Date().toISOString();
    const loadAverageAtStart = loadavg();
    const busyBeforeStart = await busyShareWhileIdle();
    const foreignMeter = await startForeignCpuMeter();
    const selection = await selectScenarios(options.scenarioIds);
    for (const { id, reason } of selection.skipped) progress(`WARNING: skipping scenario ${id}: ${reason}`);
    const started = await startTargets(options, selection, group, workDir, scenarioCleanups);
    const { targets } = started;
    await checkTargets(targets);
    progress(`all targets answer; engine ${driver.engine}; suites ${[...options.suites].join(', ')}`);
    const results = await runSuites(options, driver, started);
    const foreignCpuShare = await foreignMeter.read(group.pids());
    const gateways = byKind(targets, 'gateway');
    const report: BenchReport = {
      meta: {
        startedAt,
        finishedAt: new Date().toISOString(),
        code: codeVersion(),
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        cpuModel: cpus()[0]?.model.trim() ?? 'unknown CPU',
        cpuCount: cpus().length,
        loadAverageAtStart,
        loadAverageAtEnd: loadavg(),
        busyBeforeStart,
        foreignCpuShare,
        engine: driver.engine,
        quick: options.quick,
        profile: options.profile,
        scenarios: selection.scenarios.map(({ id, title }) => ({ id, title })),
        skippedScenarios: selection.skipped,
      },
      targets: targets.map(({ id, label, kind, scenarioId }) => ({ id, label, kind, scenarioId })),
      ...results,
      bars: judgeBars(gateways, results.load, results.paced, results.rss),
    };
    process.stdout.write(`\n${renderReport(report)}`);
    if (options.jsonOut) {
      writeFileSync(options.jsonOut, `${JSON.stringify(report, null, 2)}\n`);
      progress(`wrote ${options.jsonOut}`);
    }
    return 0;
  } finally {
    await cleanup();
    if (options.cpuProfDir)
      progress(`gateway CPU profile(s) in ${resolve(options.cpuProfDir)} (open in Chrome DevTools or speedscope)`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
