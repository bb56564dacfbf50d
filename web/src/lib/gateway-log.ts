/**
 * Gatehouse's own log lines (pino JSON) as a person reads them: local time, level, and for
 * access lines the call in one row (status, method, path, duration, key, model). Anything that
 * is not a pino line (other text, other JSON) is returned unchanged. Warnings, errors and
 * failed calls are coloured with SGR codes, which the log view's colour parser draws.
 */

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const YELLOW = '\x1b[33m';
const RED = '\x1b[31m';
const DIM = '\x1b[2m';
const RESET = '\x1b[0m';

/** Fields an access line shows in its own places; the rest follow as `name=value`. */
const ACCESS_FIELDS = new Set(['level', 'time', 'msg', 'req_id', 'method', 'path', 'status', 'ms', 'key', 'model']);
const PINO_FIELDS = new Set(['level', 'time', 'msg']);

export interface GatewayLogOptions {
  /** IANA zone for the time; the browser's own when absent. */
  timeZone?: string;
}

interface PinoLine {
  level: number;
  time: number;
  msg: string;
  [field: string]: unknown;
}

export function formatGatewayLine(line: string, options: GatewayLogOptions = {}): string {
  const record = parsePinoLine(line);
  if (!record) return line;
  const time = `${DIM}${formatTime(record.time, options.timeZone)}${RESET}`;
  if (isAccessLine(record)) return `${time} ${accessText(record)}${extras(record, ACCESS_FIELDS)}`;
  return `${time} ${levelText(record.level)} ${record.msg}${extras(record, PINO_FIELDS)}`;
}

function parsePinoLine(line: string): PinoLine | undefined {
  if (!line.startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const ok = typeof record.level === 'number' && typeof record.time === 'number' && typeof record.msg === 'string';
  return ok ? (record as PinoLine) : undefined;
}

function isAccessLine(record: PinoLine): boolean {
  return (
    record.msg === 'request' &&
    typeof record.method === 'string' &&
    typeof record.path === 'string' &&
    typeof record.status === 'number'
  );
}

/** `200 POST /v1/chat/completions 812 ms key=laptop model=qwen`. */
function accessText(record: PinoLine): string {
  const status = record.status as number;
  const colour = status >= 500 ? RED : status >= 400 ? YELLOW : '';
  const statusText = colour ? `${colour}${status}${RESET}` : String(status);
  let text = `${statusText} ${String(record.method)} ${String(record.path)}`;
  if (typeof record.ms === 'number') text += ` ${formatMs(record.ms)}`;
  if (typeof record.key === 'string') text += ` key=${record.key}`;
  if (typeof record.model === 'string') text += ` model=${record.model}`;
  return text;
}

function levelText(level: number): string {
  const name = LEVELS[level] ?? `LEVEL${level}`;
  if (level >= 50) return `${RED}${name}${RESET}`;
  if (level >= 40) return `${YELLOW}${name}${RESET}`;
  return name;
}

/** Every other field, in the line's order: ` name=value` (objects as compact JSON, errors by message). */
function extras(record: PinoLine, shown: ReadonlySet<string>): string {
  let text = '';
  for (const [name, value] of Object.entries(record)) {
    if (shown.has(name) || value === undefined) continue;
    text += ` ${name}=${fieldText(value)}`;
  }
  return text;
}

function fieldText(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) || value === '' ? JSON.stringify(value) : value;
  if (typeof value === 'object' && value !== null && 'message' in value && typeof value.message === 'string')
    return JSON.stringify(value.message);
  return JSON.stringify(value);
}

function formatMs(ms: number): string {
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
}

const timeFormats = new Map<string, Intl.DateTimeFormat>();

/** `14:03:07.042`: the date is left out, the view holds the last few minutes to hours. */
function formatTime(epochMs: number, timeZone: string | undefined): string {
  const zone = timeZone ?? '';
  let format = timeFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', {
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      fractionalSecondDigits: 3,
      hourCycle: 'h23',
      ...(timeZone ? { timeZone } : {}),
    });
    timeFormats.set(zone, format);
  }
  return format.format(epochMs);
}
