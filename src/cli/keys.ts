/**
 * `gatehouse keys ...`: manage API keys from a shell, also while the server runs (the store
 * tolerates concurrent processes; the server notices changes within a second).
 *
 * Every change is written with its audit entry in one transaction (actor `cli`, named after the
 * operating-system account), so a change the audit log cannot record is not made.
 *
 * Exit codes: 0 done, 1 refused or failed (unknown key, no confirmation, store error),
 * 2 usage error.
 */
import { createInterface } from 'node:readline';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import {
  API_KEY_LENGTH,
  API_KEY_PREFIX,
  hashApiKey,
  newKeyRecord,
  parseIsoTimestamp,
  toKeyView,
  type KeyView,
  type NewKeyInput,
} from '../auth/api-keys.js';
import { ceilingsSetBy } from '../auth/key-ceilings.js';
import { validateKeyInput, type KeyInputKind } from '../auth/key-input.js';
import type { AuditAction } from '../admin-api/types.js';
import { cliActor } from '../audit/actor.js';
import { AuditLog } from '../audit/audit-log.js';
import { parseDuration } from '../settings/index.js';
import { AmbiguousKeyReferenceError, type Store, type StoreTransaction } from '../store/store.js';
import {
  BUDGET_PERIODS,
  type BudgetPeriod,
  type KeyBudget,
  type KeyLimits,
  type KeyPatch,
  type KeyRecord,
} from '../store/records.js';
import { openStore, type StoreSettings } from '../store/open-store.js';

export interface KeysCliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Where a confirmation is read from; without it nothing can be confirmed interactively. */
  stdin?: NodeJS.ReadableStream;
  /** Whether a person is at the terminal; only then `delete` asks instead of refusing. */
  isTTY?: boolean;
}

class UsageError extends Error {}
class Refused extends Error {}

const HELP = `Usage: gatehouse keys <command> [options]

Manage the API keys clients use to call the gateway. While no key exists at all, the API is
open: every client is let in without a key.

Commands:
  create --name NAME [options]   Create a key and print it once
      --models a,b               Model ids, aliases or patterns (qwen*, gpu-box/*) the key may use
                                 (default: every model)
      --expires 30d|ISO-DATE     Expiry as a duration from now (30d, 12h, 90m) or an ISO date
      --note TEXT                Free text for operators
      --rpm N --tpm N --concurrent N
                                 Limits: requests/minute, tokens/minute, requests in flight
      --priority N               Place in the admission queue, -10..10 (default 0; higher first;
                                 a negative one as --priority=-3)
      --manage                   May list, load and unload models (GET /models, POST /models/load,
                                 POST /models/unload; default: no)
      --budget-tokens N --budget-requests N --budget-gpu-seconds N
                                 Budget per period: tokens (input + output), calls, GPU seconds
      --budget-period day|week|month
                                 The budget's calendar period in GATEHOUSE_TIMEZONE (default day)
      --quiet                    Print only the key (for scripts)
  list [--json]                  List keys (never their secrets)
  update ID|PREFIX|NAME [options]
                                 Change a key: --name, --note, --models, --priority, --rpm, --tpm,
                                 --concurrent, --budget-tokens, --budget-requests,
                                 --budget-gpu-seconds (a number, or none), --budget-period
  limits ID|PREFIX [--rpm N|none] [--tpm N|none] [--concurrent N|none]
                                 Change a key's limits (none = no limit); a running
                                 server applies them within a second
  revoke ID|PREFIX               Revoke a key: clients using it get 401 from now on
  delete ID|PREFIX [--yes]       Delete a key (asks on a terminal; --yes otherwise)

ID is a key id (key_...); PREFIX is its display prefix (sk-...) or the start of either.
A whole key (e.g. one found in a log) also identifies it.
Settings (data dir, database URL) come from the same environment as the server.
`;

const BUDGET_OPTIONS = {
  'budget-tokens': { type: 'string' },
  'budget-requests': { type: 'string' },
  'budget-gpu-seconds': { type: 'string' },
  'budget-period': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** Each budget amount's flag and field. */
const BUDGET_FLAGS = [
  ['budget-tokens', 'tokens'],
  ['budget-requests', 'requests'],
  ['budget-gpu-seconds', 'gpuSeconds'],
] as const;

const COMMAND_OPTIONS = {
  create: {
    name: { type: 'string' },
    models: { type: 'string' },
    expires: { type: 'string' },
    note: { type: 'string' },
    rpm: { type: 'string' },
    tpm: { type: 'string' },
    concurrent: { type: 'string' },
    priority: { type: 'string' },
    manage: { type: 'boolean' },
    ...BUDGET_OPTIONS,
    quiet: { type: 'boolean', short: 'q' },
    help: { type: 'boolean', short: 'h' },
  },
  update: {
    name: { type: 'string' },
    models: { type: 'string' },
    note: { type: 'string' },
    rpm: { type: 'string' },
    tpm: { type: 'string' },
    concurrent: { type: 'string' },
    priority: { type: 'string' },
    ...BUDGET_OPTIONS,
    help: { type: 'boolean', short: 'h' },
  },
  list: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  limits: {
    rpm: { type: 'string' },
    tpm: { type: 'string' },
    concurrent: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
  revoke: { help: { type: 'boolean', short: 'h' } },
  delete: { yes: { type: 'boolean', short: 'y' }, help: { type: 'boolean', short: 'h' } },
} as const satisfies Record<string, ParseArgsConfig['options']>;

type Command = keyof typeof COMMAND_OPTIONS;

/** Runs `gatehouse keys <argv...>` (argv is what follows `keys`) and returns the exit code. */
export async function runKeysCommand(argv: string[], io: KeysCliIo, settings: StoreSettings): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    (command === undefined ? io.stderr : io.stdout).write(HELP);
    return command === undefined ? 2 : 0;
  }
  if (!(command in COMMAND_OPTIONS)) {
    io.stderr.write(`gatehouse keys: unknown command "${command}"\n\n${HELP}`);
    return 2;
  }

  let store: Store | undefined;
  try {
    const parsed = parseCommand(command as Command, rest);
    if (parsed.values.help) {
      io.stdout.write(HELP);
      return 0;
    }
    // Arguments are checked before the store opens: a typo must not create a data dir.
    const run = prepare(command as Command, parsed, io);
    store = await openStore(settings);
    await run(store);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`gatehouse keys ${command}: ${error.message}\nRun "gatehouse keys --help" for usage.\n`);
      return 2;
    }
    if (error instanceof Refused || error instanceof AmbiguousKeyReferenceError) {
      io.stderr.write(`${error.message}\n`);
      return 1;
    }
    io.stderr.write(`gatehouse keys ${command} failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await store?.close();
  }
}

interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

function parseCommand(command: Command, args: string[]): Parsed {
  try {
    const { values, positionals } = parseArgs({
      args,
      options: COMMAND_OPTIONS[command],
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Parsed['values'], positionals };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function prepare(command: Command, { values, positionals }: Parsed, io: KeysCliIo): (store: Store) => Promise<void> {
  const now = Date.now();
  switch (command) {
    case 'create': {
      noPositionals(positionals);
      const input = createInput(values, now);
      return (store) => createKey(store, input, values.quiet === true, io, now);
    }
    case 'list':
      noPositionals(positionals);
      return (store) => listKeys(store, values.json === true, io);
    case 'update': {
      const reference = onePositional(positionals);
      const patch = updatePatch(values);
      return (store) => updateKey(store, reference, patch, io);
    }
    case 'limits': {
      const reference = onePositional(positionals);
      const limits = limitsPatch(values);
      return (store) => setLimits(store, reference, limits, io);
    }
    case 'revoke':
      return (store) => revokeKey(store, onePositional(positionals), io);
    case 'delete':
      return (store) => deleteKey(store, onePositional(positionals), values.yes === true, io);
  }
}

function noPositionals(positionals: string[]): void {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
}

function onePositional(positionals: string[]): string {
  if (positionals.length !== 1) throw new UsageError('expects exactly one key id or prefix');
  return positionals[0]!;
}

function createInput(values: Parsed['values'], nowMs: number): NewKeyInput {
  if (typeof values.name !== 'string' || !values.name.trim()) throw new UsageError('--name NAME is required');
  const body: Record<string, unknown> = { name: values.name, ...keyFlags(values, false) };
  if (typeof values.expires === 'string') body.expiresAt = new Date(parseExpires(values.expires, nowMs)).toISOString();
  if (values.manage === true) body.manage = true;
  return checked('create', body, nowMs);
}

/** The flags `create` and `update` share, as the admin API's body fields. */
function keyFlags(values: Parsed['values'], noneAllowed: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (typeof values.note === 'string') body.note = values.note;
  if (typeof values.models === 'string')
    body.models = values.models
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean);
  if (typeof values.priority === 'string') body.priority = parsePriority(values.priority);
  const limits: Partial<KeyLimits> = {};
  for (const limit of ['rpm', 'tpm', 'concurrent'] as const) {
    const raw = values[limit];
    if (typeof raw === 'string') limits[limit] = parseLimit(limit, raw, noneAllowed);
  }
  if (Object.keys(limits).length > 0) body.limits = limits;
  const budget = budgetFlags(values, noneAllowed);
  if (budget) body.budget = budget;
  return body;
}

/**
 * The admin API's own checks on what the flags say (`auth/key-input.ts`), so the CLI makes no
 * key the API would refuse; a refusal names the flag.
 */
function checked<K extends KeyInputKind>(kind: K, body: Record<string, unknown>, nowMs: number) {
  const result = validateKeyInput(kind, body, nowMs);
  if (!result.ok) throw new UsageError(result.issues.map((i) => `${flagOf(i.path)} ${i.message}`).join('; '));
  return result.input;
}

function flagOf(path: string): string {
  const [field = '', sub] = path.split('/').slice(1);
  if (field === 'limits' && sub) return `--${sub}`;
  if (field === 'budget') return `--${BUDGET_FLAGS.find(([, f]) => f === sub)?.[0] ?? 'budget-period'}`;
  return field === 'expiresAt' ? '--expires' : `--${field}`;
}

/** The budget flags given, or undefined when none was. */
function budgetFlags(values: Parsed['values'], noneAllowed: boolean): Partial<KeyBudget> | undefined {
  const budget: Partial<KeyBudget> = {};
  for (const [flag, field] of BUDGET_FLAGS) {
    const raw = values[flag];
    if (typeof raw === 'string') budget[field] = parseLimit(flag, raw, noneAllowed);
  }
  const period = values['budget-period'];
  if (typeof period === 'string') {
    if (!(BUDGET_PERIODS as readonly string[]).includes(period))
      throw new UsageError(`--budget-period must be one of ${BUDGET_PERIODS.join(', ')}`);
    budget.period = period as BudgetPeriod;
  }
  return Object.keys(budget).length === 0 ? undefined : budget;
}

function updatePatch(values: Parsed['values']): KeyPatch {
  const body: Record<string, unknown> = { ...keyFlags(values, true) };
  if (typeof values.name === 'string') body.name = values.name;
  if (Object.keys(body).length === 0) throw new UsageError('nothing to change: give at least one option');
  return checked('update', body, Date.now()).patch;
}

async function updateKey(store: Store, reference: string, patch: KeyPatch, io: KeysCliIo): Promise<void> {
  const key = await resolveKey(store, reference, true);
  // The operator is an admin: what they set binds a member who owns the key.
  const write = { ...patch, ceilings: ceilingsSetBy(patch) };
  const updated = await auditedWrite(store, 'key.update', key, (tx) => tx.keys.update(key.id, write));
  if (!updated) throw new Refused(`${describe(key)} was deleted meanwhile.`);
  const view = toKeyView(updated, Date.now());
  io.stdout.write(
    [`Updated ${describe(updated)}`, `  models   ${modelsText(view)}`, ...limitsLines(view), ''].join('\n'),
  );
}

function parsePriority(raw: string): number {
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw) || n < -10 || n > 10)
    throw new UsageError('--priority must be a whole number from -10 to 10');
  return n;
}

function parseLimit(limit: string, raw: string, noneAllowed: boolean): number | null {
  if (noneAllowed && raw === 'none') return null;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`--${limit} must be a whole number >= 1${noneAllowed ? ' or "none"' : ''}`);
  return n;
}

function limitsPatch(values: Parsed['values']): Partial<KeyLimits> {
  const patch: Partial<KeyLimits> = {};
  for (const limit of ['rpm', 'tpm', 'concurrent'] as const) {
    const raw = values[limit];
    if (typeof raw === 'string') patch[limit] = parseLimit(limit, raw, true);
  }
  if (Object.keys(patch).length === 0)
    throw new UsageError('give at least one of --rpm, --tpm, --concurrent (a number, or "none")');
  return checked('update', { limits: patch }, Date.now()).patch.limits!;
}

async function setLimits(store: Store, reference: string, limits: Partial<KeyLimits>, io: KeysCliIo): Promise<void> {
  const key = await resolveKey(store, reference);
  const write = { limits, ceilings: ceilingsSetBy({ limits }) };
  const updated = await auditedWrite(store, 'key.update', key, (tx) => tx.keys.update(key.id, write));
  if (!updated) throw new Refused(`${describe(key)} was deleted meanwhile.`);
  const text = (['rpm', 'tpm', 'concurrent'] as const).map((k) => `${k} ${updated.limits[k] ?? 'none'}`).join(', ');
  io.stdout.write(`Limits of ${describe(updated)}: ${text}.\n`);
}

function parseExpires(raw: string, nowMs: number): number {
  let at: number | undefined;
  if (/^\d+(?:\.\d+)?\s*[a-z]+$/i.test(raw.trim())) {
    try {
      at = nowMs + parseDuration(raw, '--expires');
    } catch {
      at = undefined;
    }
  } else {
    at = parseIsoTimestamp(raw);
  }
  if (at === undefined)
    throw new UsageError(
      `--expires "${raw}" is neither a duration (30d, 12h, 90m) nor an ISO date (2030-01-31, 2030-01-31T12:00Z)`,
    );
  if (at <= nowMs) throw new UsageError(`--expires "${raw}" is in the past`);
  return at;
}

async function createKey(
  store: Store,
  input: NewKeyInput,
  quiet: boolean,
  io: KeysCliIo,
  nowMs: number,
): Promise<void> {
  const { record, secret } = newKeyRecord(input, nowMs);
  await auditedWrite(store, 'key.create', record, (tx) => tx.keys.create(record));
  if (quiet) {
    io.stdout.write(`${secret}\n`);
    return;
  }
  const view = toKeyView(record, nowMs);
  io.stdout.write(
    [
      `Created API key ${view.id} "${view.name}"`,
      `  prefix   ${view.prefix}`,
      `  models   ${modelsText(view)}`,
      `  expires  ${view.expiresAt ?? 'never'}`,
      ...limitsLines(view),
      '',
      `  ${secret}`,
      '',
      'Store it now: it will not be shown again.',
      '',
    ].join('\n'),
  );
}

function limitsLines(view: KeyView): string[] {
  const parts = (['rpm', 'tpm', 'concurrent'] as const)
    .filter((k) => view.limits[k] !== null)
    .map((k) => `${k} ${view.limits[k]}`);
  const budget = BUDGET_FLAGS.filter(([, field]) => view.budget[field] !== null).map(
    ([flag, field]) => `${flag.slice('budget-'.length)} ${view.budget[field]}`,
  );
  return [
    ...(parts.length ? [`  limits   ${parts.join(', ')}`] : []),
    ...(budget.length ? [`  budget   ${budget.join(', ')} per ${view.budget.period}`] : []),
    ...(view.priority !== 0 ? [`  priority ${view.priority}`] : []),
    ...(view.manage ? ['  manage   may list, load and unload models'] : []),
  ];
}

async function listKeys(store: Store, json: boolean, io: KeysCliIo): Promise<void> {
  const nowMs = Date.now();
  const views = (await store.keys.list()).map((key) => toKeyView(key, nowMs));
  if (json) {
    io.stdout.write(`${JSON.stringify({ keys: views }, null, 2)}\n`);
    return;
  }
  if (views.length === 0) {
    io.stdout.write(
      'No API keys: the API is open, every client is let in without a key.\nCreate one with: gatehouse ' +
        'keys create --name NAME\n',
    );
    return;
  }
  const header = ['ID', 'PREFIX', 'NAME', 'STATUS', 'CREATED', 'LAST USED', 'EXPIRES', 'MODELS'];
  const rows = views.map((v) => [
    v.id,
    v.prefix,
    truncate(v.name, 32),
    v.status,
    shortTime(v.createdAt),
    shortTime(v.lastUsedAt) ?? 'never',
    shortTime(v.expiresAt) ?? 'never',
    truncate(modelsText(v), 48),
  ]);
  io.stdout.write(formatTable([header, ...rows]));
}

async function revokeKey(store: Store, reference: string, io: KeysCliIo): Promise<void> {
  const key = await resolveKey(store, reference);
  if (key.revokedAt !== null) {
    io.stdout.write(`${describe(key)} was already revoked at ${new Date(key.revokedAt).toISOString()}.\n`);
    return;
  }
  await auditedWrite(store, 'key.revoke', key, (tx) => tx.keys.update(key.id, { revokedAt: Date.now() }));
  io.stdout.write(`Revoked ${describe(key)}. Clients using it are refused from now on.\n`);
}

async function deleteKey(store: Store, reference: string, yes: boolean, io: KeysCliIo): Promise<void> {
  const key = await resolveKey(store, reference);
  const isLast = (await store.keys.count()) <= 1;
  if (isLast) {
    io.stderr.write(
      `Warning: ${key.id} is the last API key. Once it is deleted the API is OPEN: every client is let in ` +
        `without a key.\n` +
        `(To stop this key but keep the API closed, use "gatehouse keys revoke ${key.id}" instead.)\n`,
    );
  }
  if (!yes) {
    if (!io.isTTY || !io.stdin) {
      throw new Refused(
        `Not deleting ${describe(key)}: not on a terminal, so nobody can confirm. Add --yes to delete it.`,
      );
    }
    const answer = await ask(io, `Delete ${describe(key)}${isLast ? ' and open the API' : ''}? [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new Refused('Not deleted.');
  }
  await auditedWrite(store, 'key.delete', key, (tx) => tx.keys.delete(key.id));
  const remaining = await store.keys.count();
  io.stdout.write(
    `Deleted ${describe(key)}. ${remaining} key${remaining === 1 ? '' : 's'} remain${remaining === 1 ? 's' : ''}.\n`,
  );
  if (remaining === 0)
    io.stderr.write('Warning: no API keys remain: the API is now open, every client is let in without a key.\n');
}

/** A key write and its audit entry, in one transaction: the CLI changes nothing it cannot record. */
function auditedWrite<T>(
  store: Store,
  action: AuditAction,
  key: Pick<KeyRecord, 'id' | 'name'>,
  work: (tx: StoreTransaction) => Promise<T>,
): Promise<T> {
  return new AuditLog(store).commit(work, () => ({
    actor: cliActor(),
    client: null,
    action,
    target: { kind: 'key', id: key.id, name: key.name, version: null },
    outcome: 'success',
    reason: null,
  }));
}

async function resolveKey(store: Store, reference: string, byName = false): Promise<KeyRecord> {
  // A whole key pasted from a leak report: find it by hash, the only way it can be found.
  if (reference.length === API_KEY_LENGTH && reference.startsWith(API_KEY_PREFIX)) {
    const hash = hashApiKey(reference);
    const leaked = (await store.keys.list()).find((key) => key.hash === hash);
    if (leaked) return leaked;
  }
  const key = await store.keys.findByIdOrPrefix(reference);
  if (key) return key;
  if (byName) {
    const named = (await store.keys.list()).filter((k) => k.name === reference);
    if (named.length > 1) throw new AmbiguousKeyReferenceError(reference, named);
    if (named[0]) return named[0];
  }
  throw new Refused(`No API key matches "${reference}". "gatehouse keys list" shows ids and prefixes.`);
}

async function ask(io: KeysCliIo, prompt: string): Promise<string> {
  const rl = createInterface({ input: io.stdin!, output: io.stdout, terminal: false });
  try {
    // An input that ends before answering is a "no", not a hang. The callback form answers
    // synchronously on the line, before the input's end closes the interface.
    return await new Promise<string>((resolve) => {
      rl.once('close', () => resolve(''));
      rl.question(prompt, resolve);
    });
  } finally {
    rl.close();
  }
}

function describe(key: KeyRecord): string {
  return `${key.id} (${key.prefix}, "${key.name}")`;
}

function modelsText(view: KeyView): string {
  return view.models.length === 0 ? 'all' : view.models.join(',');
}

/** `2030-01-31 12:00Z`: minutes are enough in a table; `--json` has full timestamps. */
function shortTime(iso: string): string;
function shortTime(iso: string | null): string | undefined;
function shortTime(iso: string | null): string | undefined {
  return iso === null ? undefined : `${iso.slice(0, 10)} ${iso.slice(11, 16)}Z`;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function formatTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return (
    rows
      .map((row) =>
        row
          .map((cell, col) => cell.padEnd(widths[col]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
