/**
 * An optional extra: the validator against the outside corpus (llama-swap's own examples and real
 * configs from public repositories) in the `shared` checkout beside the repo, when it is there.
 * Without it this file prints one line and its tests do not run; ./configs covers the same ground.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compileConfigSchema } from '../../src/config-editor/schema-source.js';
import { formatConfigText } from '../../src/config-editor/format.js';
import { validateConfigText, type ConfigIssue } from '../../src/config-editor/validate.js';
import { SCHEMA_PATH } from './helpers.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const CORPUS = join(REPO, '..', 'shared', 'fixtures');
const present = existsSync(CORPUS);
if (!present) console.log(`shared-corpus.test.ts: skipped, the optional corpus ${CORPUS} is not beside the repo`);

const corpusText = (relative: string) => readFileSync(join(CORPUS, relative), 'utf8');
const schema = compileConfigSchema(JSON.parse(readFileSync(SCHEMA_PATH(), 'utf8')) as Record<string, unknown>);
const check = (text: string) => validateConfigText(text, schema);
const brief = (issues: ConfigIssue[]) =>
  issues.map((i) => ({ message: i.message, path: i.path, line: i.line, column: i.column }));

interface ManifestEntry {
  file: string;
  expected: { valid: boolean; kind: 'ok' | 'yaml' | 'schema' };
  reason: string;
}

describe.runIf(present)('llama-swap examples (corpus: llama-swap)', () => {
  it("bundles llama-swap's published config-schema.json byte for byte", () => {
    expect(readFileSync(SCHEMA_PATH(), 'utf8')).toBe(corpusText('llama-swap/config-schema.json'));
  });

  it('accepts config.example.yaml and the docker examples', () => {
    for (const file of [
      'llama-swap/config.example.yaml',
      'llama-swap/examples/docker-config.example.yaml',
      'llama-swap/examples/docker-unified-config.example.yaml',
    ]) {
      expect(brief(check(corpusText(file)).errors), file).toEqual([]);
    }
  });

  it('rejects examples/aider-qwq-coder.yaml on profiles (list syntax), pointing at the profile', () => {
    const text = corpusText('llama-swap/examples/aider-qwq-coder.yaml');
    const result = check(text);
    expect(result.errors.length).toBeGreaterThan(0);
    expect(result.errors.every((e) => e.path.startsWith('/profiles'))).toBe(true);
    const first = result.errors[0]!;
    expect(first).toMatchObject({ kind: 'schema', path: '/profiles/aider', line: 6, column: 7 });
    expect(text.split('\n')[first.line! - 1]!.slice(first.column! - 1)).toBe('- qwen-coder-32B');
  });

  it('gives config.example.yaml only the loader warnings its illustrative parts earn', () => {
    const result = check(corpusText('llama-swap/config.example.yaml'));
    // "unlisted-model" has cmd without ${PORT} and no proxy; the router's groups and one
    // selector name models the example does not define (it says so in a comment).
    expect(result.warnings.map((w) => w.path)).toEqual([
      '/models/unlisted-model/cmd',
      '/routing/router/settings/groups/group1/members/0',
      '/routing/router/settings/groups/group1/members/1',
      '/routing/router/settings/groups/group2/members/1',
      '/routing/router/settings/groups/group2/members/2',
      '/routing/router/settings/groups/forever/members/0',
      '/routing/router/settings/groups/forever/members/1',
      '/routing/router/settings/groups/forever/members/2',
      '/selectors/coding-model/targets/1',
      '/selectors/llama/targets/1',
      '/selectors/llama/targets/2',
      '/profiles/coding/pins/llm-plan',
    ]);
  });

  it('formats config.example.yaml without changing its meaning', () => {
    const result = formatConfigText(corpusText('llama-swap/config.example.yaml'));
    if (!result.ok) throw new Error('format failed');
    expect(check(result.text).errors).toEqual([]);
    expect(result.text).toContain('# llama-swap YAML configuration example');
  });
});

describe.runIf(present)('real configs (corpus: real-configs, verdicts of MANIFEST.json)', () => {
  const files = present
    ? (JSON.parse(corpusText('real-configs/MANIFEST.json')) as { files: ManifestEntry[] }).files
    : [];

  it('has the files the manifest lists', () => {
    expect(files.length).toBeGreaterThanOrEqual(14);
    for (const entry of files) expect(existsSync(join(CORPUS, 'real-configs', entry.file)), entry.file).toBe(true);
  });

  for (const entry of files) {
    it(`${entry.file}: ${entry.expected.valid ? 'valid' : `invalid (${entry.expected.kind})`}`, () => {
      const result = check(corpusText(`real-configs/${entry.file}`));
      expect(result.errors.length === 0, JSON.stringify(brief(result.errors))).toBe(entry.expected.valid);
      if (entry.expected.kind === 'ok') return;
      expect(result.errors[0]!.kind).toBe(entry.expected.kind);
      // The manifest's reason is yaml's/Ajv's message; ours drops the trailing position (it has its own fields).
      const reason = entry.reason.replace(/ at line \d+, column \d+:$/, '');
      expect(result.errors.map((e) => e.message)).toContain(reason);
    });
  }
});
