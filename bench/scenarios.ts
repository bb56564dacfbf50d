/**
 * Gateway scenarios: each one is a separately started gateway process with its own settings
 * (environment, see src/settings/) and the request headers its load carries, measured in the
 * same rounds as the upstream (direct) and the floor.
 *
 * `keyed` is what the bars judge: an API key required on every call and usage recording on
 * (SQLite), as the public gateway harnesses publish gateways with their keys and logging on.
 * The others change one thing, for context in the tables.
 *
 * Adding a scenario: append an entry below. `prepare` runs after the scenario's empty data dir
 * exists and before its gateway starts; it may call the `gatehouse` CLI against that data dir
 * (e.g. to create an API key) and return headers or settings to merge in, a `check` run once the
 * gateway answers, and a `cleanup` run after every gateway process has stopped.
 */
import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';

export interface ScenarioContext {
  /** This scenario's own GATEHOUSE_DATA_DIR (empty, in a temp dir removed after the run). */
  dataDir: string;
  /** Runs `gatehouse ARGS...` with this scenario's environment and data dir (bounded in time). */
  runGatehouse(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

export interface ScenarioSetup {
  /** Extra gateway environment, on top of a clean one (inherited GATEHOUSE_* variables are dropped). */
  gatewayEnv: Readonly<Record<string, string>>;
  /** Headers every request sent through this scenario's gateway carries. */
  requestHeaders: Readonly<Record<string, string>>;
}

export interface PreparedScenario extends Partial<ScenarioSetup> {
  /** Runs once the gateway answers /healthz, before any load: proves the scenario is what it claims. */
  check?: (gateway: { url: string; headers: Readonly<Record<string, string>> }) => Promise<void>;
  /** Runs after every gateway process has stopped (also after errors and Ctrl-C); must be bounded in time. */
  cleanup?: () => Promise<void>;
}

export interface Scenario extends ScenarioSetup {
  id: string;
  /** What differs from the default configuration, for the report's legend. */
  title: string;
  /** Runs with no `--scenarios` option. */
  byDefault: boolean;
  /**
   * A reason the scenario cannot run here (e.g. no PostgreSQL), or undefined. A default run
   * skips an unavailable scenario and says so in the report; naming it with --scenarios fails.
   */
  unavailable?: () => Promise<string | undefined>;
  /** Another checkout's `bin/gatehouse` to run instead of this one's. */
  bin?: string;
  prepare?: (ctx: ScenarioContext) => Promise<PreparedScenario>;
}

/** The database the `postgres` scenario uses (a fresh schema in it, dropped after the run). */
const BENCH_DATABASE_URL_ENV = 'GATEHOUSE_BENCH_DATABASE_URL';
const DEFAULT_BENCH_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const PG_CONNECT_TIMEOUT_MS = 3000;
const PG_QUERY_TIMEOUT_MS = 15_000;

/** Another checkout (built) whose gateway the `baseline` scenario runs, as keyed, for a before/after. */
const BASELINE_ENV = 'GATEHOUSE_BENCH_BASELINE';
const baselineBin = () => {
  const dir = process.env[BASELINE_ENV]?.trim();
  return dir ? join(resolve(dir), 'bin', 'gatehouse') : undefined;
};

const benchDatabaseUrl = () => process.env[BENCH_DATABASE_URL_ENV]?.trim() || DEFAULT_BENCH_DATABASE_URL;

/**
 * Creates one API key in the scenario's data dir; every request then sends it, and a request without it must get
 * 401.
 */
async function requireKey({ runGatehouse }: ScenarioContext): Promise<PreparedScenario> {
  const created = await runGatehouse(['keys', 'create', '--name', 'bench', '--quiet']);
  const key = created.stdout.trim();
  if (created.code !== 0 || key === '' || /\s/.test(key))
    throw new Error(`gatehouse keys create failed (exit ${created.code}): ${created.stderr || created.stdout}`);
  return {
    requestHeaders: { authorization: `Bearer ${key}` },
    // Without the key the gateway must refuse, or the scenario measures open mode.
    async check({ url }) {
      const status = await postStatus(`${url}/v1/chat/completions`);
      if (status !== 401)
        throw new Error(
          `a request without the key answered ${status}, expected 401 (is the key in the gateway's store?)`,
        );
    },
  };
}

/** The scenario the bars judge. */
export const JUDGED_SCENARIO = 'keyed';

const scenarios: readonly Scenario[] = [
  {
    id: JUDGED_SCENARIO,
    title: 'one API key, sent with every request; usage recording on; SQLite',
    byDefault: true,
    gatewayEnv: {},
    requestHeaders: {},
    prepare: requireKey,
  },
  {
    id: 'recording-off',
    title: 'as keyed, with GATEHOUSE_USAGE_RECORDING=false',
    byDefault: true,
    gatewayEnv: { GATEHOUSE_USAGE_RECORDING: 'false' },
    requestHeaders: {},
    prepare: requireKey,
  },
  {
    id: 'baseline',
    title: `as keyed, run from the checkout in ${BASELINE_ENV} (built), for a before/after comparison`,
    byDefault: false,
    gatewayEnv: {},
    requestHeaders: {},
    bin: baselineBin(),
    async unavailable() {
      const bin = baselineBin();
      if (bin === undefined) return `set ${BASELINE_ENV} to another checkout of Gatehouse, built`;
      return existsSync(bin) ? undefined : `no ${bin}`;
    },
    prepare: requireKey,
  },
  {
    id: 'open',
    title: 'as keyed, without API keys (open mode)',
    byDefault: false,
    gatewayEnv: {},
    requestHeaders: {},
  },
  {
    id: 'postgres',
    title: `as keyed, with the PostgreSQL store (${BENCH_DATABASE_URL_ENV}, a fresh schema)`,
    byDefault: false,
    gatewayEnv: {},
    requestHeaders: {},
    async unavailable() {
      const url = benchDatabaseUrl();
      try {
        await withPostgres(url, (client) => client.query('SELECT 1'));
        return undefined;
      } catch (error) {
        return `no PostgreSQL at ${describeUrl(url)} (${(error as Error).message}); set ${BENCH_DATABASE_URL_ENV}`;
      }
    },
    async prepare(ctx) {
      const keyed = await requireKey(ctx);
      const url = benchDatabaseUrl();
      const schema = `bench_${Array.from({ length: 12 }, () => String.fromCharCode(97 + randomInt(26))).join('')}`;
      return {
        ...keyed,
        gatewayEnv: { GATEHOUSE_DATABASE_URL: url, GATEHOUSE_DATABASE_SCHEMA: schema },
        // The gateway migrates at start: tables in the fresh schema prove it runs on PostgreSQL.
        async check(gateway) {
          await keyed.check?.(gateway);
          const { rows } = await withPostgres(url, (client) =>
            client.query<{ n: string }>('SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = $1', [
              schema,
            ]),
          );
          if (Number(rows[0]?.n ?? 0) === 0)
            throw new Error(`postgres: the gateway created no tables in schema ${schema} at ${describeUrl(url)}`);
        },
        cleanup: () =>
          withPostgres(url, (client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).then(
            () => undefined,
          ),
      };
    },
  },
];

export interface ScenarioSelection {
  /** In run order; `keyed` first. */
  scenarios: Scenario[];
  /** Default scenarios left out because they cannot run here. */
  skipped: Array<{ id: string; reason: string }>;
}

/**
 * The scenarios to run: every default one (skipping unavailable ones), or the named ones.
 * `keyed` always runs (added when not named): the bars judge it.
 */
export async function selectScenarios(ids: readonly string[] | undefined): Promise<ScenarioSelection> {
  const skipped: ScenarioSelection['skipped'] = [];
  let chosen: Scenario[];
  if (ids === undefined) {
    chosen = [];
    for (const scenario of scenarios.filter((s) => s.byDefault)) {
      const reason = await scenario.unavailable?.();
      if (reason === undefined) chosen.push(scenario);
      else skipped.push({ id: scenario.id, reason });
    }
  } else {
    chosen = [];
    for (const id of new Set([JUDGED_SCENARIO, ...ids])) {
      const scenario = scenarios.find((s) => s.id === id);
      if (!scenario) throw new Error(`unknown scenario "${id}" (known: ${scenarios.map((s) => s.id).join(', ')})`);
      const reason = await scenario.unavailable?.();
      if (reason !== undefined) throw new Error(`scenario ${id} cannot run: ${reason}`);
      chosen.push(scenario);
    }
  }
  return { scenarios: chosen, skipped };
}

/** Host, port and database of a PostgreSQL URL, never its password. */
function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.host}${u.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
}

async function withPostgres<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
    query_timeout: PG_QUERY_TIMEOUT_MS,
    statement_timeout: PG_QUERY_TIMEOUT_MS,
    lock_timeout: PG_QUERY_TIMEOUT_MS,
  });
  client.on('error', () => {}); // a dropped connection fails the query instead of the process
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Status of a JSON chat completion POST without credentials (bounded by a 5 s timeout). */
async function postStatus(url: string): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Say hello.' }] }),
    signal: AbortSignal.timeout(5000),
  });
  await response.arrayBuffer();
  return response.status;
}
