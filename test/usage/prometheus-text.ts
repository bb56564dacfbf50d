/**
 * A small, strict parser of the Prometheus text exposition format (0.0.4), for tests: it throws
 * on anything a real scraper would reject or misread (sample before its TYPE, bad names, bad
 * escapes, duplicate series, non-cumulative histogram buckets, `_count` different from the
 * `+Inf` bucket).
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string | undefined;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parsePrometheusText(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('exposition must end with a newline');
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  const lines = text.split('\n').slice(0, -1);
  lines.forEach((line, i) => {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line === '') return;
    if (line.startsWith('#')) {
      const match = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!match) {
        if (line.startsWith('# HELP') || line.startsWith('# TYPE')) throw new Error(`malformed ${where}`);
        return; // other comments are allowed
      }
      const [, kind, name, rest] = match as unknown as [string, string, string, string];
      if (!METRIC_NAME.test(name)) throw new Error(`bad metric name in ${where}`);
      const family = families.get(name) ?? { name, type: 'untyped' as Family['type'], help: undefined, samples: [] };
      if (kind === 'TYPE') {
        if (families.get(name)?.samples.length) throw new Error(`TYPE after samples in ${where}`);
        if (!TYPES.has(rest)) throw new Error(`unknown type in ${where}`);
        if (families.has(name) && families.get(name)!.type !== 'untyped') throw new Error(`second TYPE in ${where}`);
        family.type = rest as Family['type'];
      } else {
        if (family.help !== undefined) throw new Error(`second HELP in ${where}`);
        family.help = rest;
      }
      families.set(name, family);
      return;
    }
    const sample = parseSample(line, where);
    const family = familyOf(sample.name, families);
    if (!family) throw new Error(`sample without a TYPE in ${where}`);
    const id = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (seen.has(id)) throw new Error(`duplicate series in ${where}`);
    seen.add(id);
    family.samples.push(sample);
  });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

function familyOf(sampleName: string, families: Map<string, Family>): Family | undefined {
  const direct = families.get(sampleName);
  if (direct) return direct;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sampleName.endsWith(suffix)) continue;
    const family = families.get(sampleName.slice(0, -suffix.length));
    if (family && (family.type === 'histogram' || family.type === 'summary')) return family;
  }
  return undefined;
}

function parseSample(line: string, where: string): Sample {
  let i = 0;
  while (i < line.length && line[i] !== '{' && line[i] !== ' ') i++;
  const name = line.slice(0, i);
  if (!METRIC_NAME.test(name)) throw new Error(`bad sample name in ${where}`);
  const labels: Record<string, string> = {};
  if (line[i] === '{') {
    i++;
    while (line[i] !== '}') {
      let j = i;
      while (j < line.length && line[j] !== '=') j++;
      const label = line.slice(i, j);
      if (!LABEL_NAME.test(label)) throw new Error(`bad label name "${label}" in ${where}`);
      if (label in labels) throw new Error(`duplicate label in ${where}`);
      if (line[j + 1] !== '"') throw new Error(`unquoted label value in ${where}`);
      let k = j + 2;
      let value = '';
      for (;;) {
        const c = line[k];
        if (c === undefined) throw new Error(`unterminated label value in ${where}`);
        if (c === '"') break;
        if (c === '\\') {
          const next = line[k + 1];
          if (next === '\\') value += '\\';
          else if (next === '"') value += '"';
          else if (next === 'n') value += '\n';
          else throw new Error(`bad escape in ${where}`);
          k += 2;
          continue;
        }
        value += c;
        k++;
      }
      labels[label] = value;
      i = k + 1;
      if (line[i] === ',') {
        i++;
        if (line[i] === '}') throw new Error(`trailing comma in ${where}`);
      } else if (line[i] !== '}') {
        throw new Error(`expected , or } in ${where}`);
      }
    }
    i++;
  }
  if (line[i] !== ' ') throw new Error(`expected a space before the value in ${where}`);
  const parts = line.slice(i + 1).split(' ');
  if (parts.length > 2) throw new Error(`trailing text in ${where}`);
  const value = parseValue(parts[0]!, where);
  if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`bad timestamp in ${where}`);
  return { name, labels, value };
}

/**
 * As the format specifies: what Go's strconv.ParseFloat accepts, i.e. special values in any
 * case (prom-client writes NaN as `Nan`, which Prometheus reads fine).
 */
function parseValue(raw: string, where: string): number {
  if (/^\+?inf(inity)?$/i.test(raw)) return Infinity;
  if (/^-inf(inity)?$/i.test(raw)) return -Infinity;
  if (/^nan$/i.test(raw)) return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`bad value in ${where}`);
  return Number(raw);
}

function checkHistogram(family: Family): void {
  const series = new Map<string, { buckets: Array<[number, number]>; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const id = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(id) ?? { buckets: [] };
    if (s.name.endsWith('_bucket')) {
      if (le === undefined) throw new Error(`${family.name}: bucket without le`);
      entry.buckets.push([parseValue(le, family.name), s.value]);
    } else if (s.name.endsWith('_count')) {
      entry.count = s.value;
    }
    series.set(id, entry);
  }
  for (const [id, { buckets, count }] of series) {
    const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i]![1] < sorted[i - 1]![1]) throw new Error(`${family.name}${id}: buckets are not cumulative`);
    }
    const inf = sorted.at(-1);
    if (!inf || inf[0] !== Infinity) throw new Error(`${family.name}${id}: no +Inf bucket`);
    if (inf[1] !== count)
      throw new Error(`${family.name}${id}: _count ${count} differs from the +Inf bucket ${inf[1]}`);
  }
}

/** The value of one series, 0 when absent (a counter not yet incremented). */
export function valueOf(
  families: Map<string, Family>,
  sampleName: string,
  labels: Record<string, string> = {},
): number {
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (s.name !== sampleName) continue;
      const keys = Object.keys(labels);
      if (keys.length === Object.keys(s.labels).length && keys.every((k) => s.labels[k] === labels[k])) return s.value;
    }
  }
  return 0;
}

/** Every series of a sample name, for "never decreases" comparisons. */
export function seriesOf(families: Map<string, Family>, sampleName: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const family of families.values()) {
    for (const s of family.samples)
      if (s.name === sampleName) out.set(JSON.stringify(Object.entries(s.labels).sort()), s.value);
  }
  return out;
}
