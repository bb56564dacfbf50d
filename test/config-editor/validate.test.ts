import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ValidateFunction } from 'ajv';
import { compileConfigSchema } from '../../src/config-editor/schema-source.js';
import { formatConfigText } from '../../src/config-editor/format.js';
import { re2Problem } from '../../src/config-editor/loader-checks.js';
import { validateConfigText, type ConfigIssue } from '../../src/config-editor/validate.js';
import { fixtureBytes, fixturePath, SCHEMA_PATH } from './helpers.js';

const schema: ValidateFunction = compileConfigSchema(
  JSON.parse(readFileSync(SCHEMA_PATH(), 'utf8')) as Record<string, unknown>,
);
const check = (text: string) => validateConfigText(text, schema);
const brief = (issues: ConfigIssue[]) =>
  issues.map((i) => ({ message: i.message, path: i.path, line: i.line, column: i.column }));

interface ManifestEntry {
  file: string;
  expected: { valid: boolean; kind: 'ok' | 'yaml' | 'schema' };
  reason: string;
}

describe('llama-swap fixtures (../shared/fixtures/llama-swap)', () => {
  it('accepts config.example.yaml and the docker examples', () => {
    for (const file of [
      'llama-swap/config.example.yaml',
      'llama-swap/examples/docker-config.example.yaml',
      'llama-swap/examples/docker-unified-config.example.yaml',
    ]) {
      const result = check(fixtureBytes(file).toString('utf8'));
      expect(brief(result.errors), file).toEqual([]);
    }
  });

  it('rejects examples/aider-qwq-coder.yaml on profiles (list syntax), pointing at the profile', () => {
    const text = fixtureBytes('llama-swap/examples/aider-qwq-coder.yaml').toString('utf8');
    const result = check(text);
    expect(result.errors.length).toBeGreaterThan(0);
    expect(result.errors.every((e) => e.path.startsWith('/profiles'))).toBe(true);
    const first = result.errors[0]!;
    expect(first).toMatchObject({ kind: 'schema', path: '/profiles/aider', line: 6, column: 7 });
    expect(first.message).toBe('/profiles/aider must be object');
    // the position is the place of the list in the text
    const lines = text.split('\n');
    expect(lines[first.line! - 1]!.slice(first.column! - 1)).toBe('- qwen-coder-32B');
  });
});

describe('real configs (../shared/fixtures/real-configs, verdicts of MANIFEST.json)', () => {
  const manifest = JSON.parse(readFileSync(fixturePath('real-configs/MANIFEST.json'), 'utf8')) as {
    files: ManifestEntry[];
  };

  it('has the files the manifest lists', () => {
    expect(manifest.files.length).toBeGreaterThanOrEqual(14);
    for (const entry of manifest.files) fixturePath(`real-configs/${entry.file}`);
  });

  for (const entry of manifest.files) {
    it(`${entry.file}: ${entry.expected.valid ? 'valid' : `invalid (${entry.expected.kind})`}`, () => {
      const result = check(fixtureBytes(`real-configs/${entry.file}`).toString('utf8'));
      expect(result.errors.length === 0, JSON.stringify(brief(result.errors))).toBe(entry.expected.valid);
      if (entry.expected.kind === 'ok') return;
      expect(result.errors[0]!.kind).toBe(entry.expected.kind);
      // The manifest's reason is yaml's/Ajv's message; ours drops the trailing position (it has its own fields).
      const reason = entry.reason.replace(/ at line \d+, column \d+:$/, '');
      expect(result.errors.map((e) => e.message)).toContain(reason);
    });
  }
});

describe('YAML errors', () => {
  it('reports a duplicate key with its line and column', () => {
    const result = check('models:\n  a:\n    cmd: x\n    cmd: y\n');
    expect(brief(result.errors)).toEqual([{ message: 'Map keys must be unique', path: '', line: 4, column: 5 }]);
    expect(result.errors[0]!.kind).toBe('yaml');
  });

  it('reports a syntax error and runs no schema check on a text that does not parse', () => {
    const result = check('models:\n  qwen: [unclosed\n');
    expect(result.errors.length).toBeGreaterThan(0);
    expect(result.errors.every((e) => e.kind === 'yaml' && e.line !== null)).toBe(true);
  });

  it('counts positions past a BOM and across CRLF lines', () => {
    const result = check('\uFEFFmodels:\r\n  a:\r\n    cmd: x\r\n    ttl: soon\r\n');
    expect(brief(result.errors)).toEqual([
      { message: '/models/a/ttl must be integer', path: '/models/a/ttl', line: 4, column: 10 },
    ]);
    expect(result.errors[0]).toMatchObject({
      from: '\uFEFFmodels:\r\n  a:\r\n    cmd: x\r\n    ttl: '.length,
      to: '\uFEFFmodels:\r\n  a:\r\n    cmd: x\r\n    ttl: soon'.length,
    });
  });

  it('applies merge keys the way llama-swap (yaml.v3) does', () => {
    const text = 'defaults: &d\n  cmd: llama-server --port ${PORT}\nmodels:\n  a:\n    <<: *d\n    ttl: 5\n';
    expect(check(text).errors).toEqual([]);
  });
});

describe('schema errors map back to the text', () => {
  it('points a missing required property at the key of the object', () => {
    const result = check('models:\n  broken:\n    name: no command\n');
    expect(brief(result.errors)).toEqual([
      { message: "/models/broken must have required property 'cmd'", path: '/models/broken', line: 2, column: 3 },
    ]);
  });

  it('points an unknown key in a closed object at that key', () => {
    const result = check('models:\n  a:\n    cmd: x --port ${PORT}\n    filters:\n      stripParms: temperature\n');
    expect(brief(result.errors)).toEqual([
      {
        message: "/models/a/filters must NOT have additional properties: 'stripParms'",
        path: '/models/a/filters/stripParms',
        line: 5,
        column: 7,
      },
    ]);
  });

  it('names the allowed values of an enum', () => {
    const result = check('logLevel: loud\nmodels: {}\n');
    expect(brief(result.errors)).toEqual([
      {
        message: '/logLevel must be equal to one of the allowed values: "debug", "info", "warn", "error"',
        path: '/logLevel',
        line: 1,
        column: 11,
      },
    ]);
  });

  it('reports every error at once', () => {
    const result = check('logLevel: loud\nstartPort: high\nmodels:\n  a: {}\n');
    expect(result.errors.map((e) => e.path).sort()).toEqual(['/logLevel', '/models/a', '/startPort']);
  });

  it('reports legacy groups together with matrix once, not with the if/then noise', () => {
    const result = check(
      'models:\n  a:\n    cmd: x --port ${PORT}\ngroups:\n  g:\n    members: [a]\nmatrix:\n  vars: {a: ' +
        'a}\n  sets: {s: "a"}\n',
    );
    expect(result.errors.filter((e) => e.path === '').map((e) => e.message)).toEqual([
      "/ must not have 'matrix' here",
      "/ must not have 'groups' here",
    ]);
  });

  it('names the reserved macro names', () => {
    const result = check('macros:\n  PORT: 1\nmodels: {}\n');
    expect(brief(result.errors)).toEqual([
      {
        message: '/macros property name \'PORT\' must not be "PID" or "PORT" or "MODEL_ID"',
        path: '/macros/PORT',
        line: 2,
        column: 3,
      },
    ]);
  });

  it('finds a value that came from a merge key', () => {
    const result = check('defaults: &d\n  cmd: x\n  ttl: soon\nmodels:\n  a:\n    <<: *d\n');
    const ttl = result.errors.find((e) => e.path === '/models/a/ttl');
    expect(ttl).toMatchObject({ line: 3, column: 8 });
  });

  it('turns a type error on a ${...} placeholder into a warning (llama-swap substitutes it first)', () => {
    const result = check(
      'macros:\n  t: 60\nstartPort: ${env.PORT}\nmodels:\n  a:\n    cmd: x --port ${PORT}\n    ttl: ${t}\n',
    );
    expect(result.errors).toEqual([]);
    expect(result.warnings.map((w) => [w.kind, w.path])).toEqual([
      ['placeholder', '/startPort'],
      ['placeholder', '/models/a/ttl'],
    ]);
  });
});

describe('loader checks are warnings', () => {
  const warningsOf = (text: string) => {
    const result = check(text);
    expect(brief(result.errors)).toEqual([]);
    return result.warnings.map((w) => ({ path: w.path, line: w.line, message: w.message }));
  };

  it('flags an alias used by two models, at the second one', () => {
    const w = warningsOf(
      'models:\n  a:\n    cmd: x --port ${PORT}\n    aliases: [gpt]\n  b:\n    cmd: y --port ${PORT}\n    ' +
        'aliases:\n      - gpt\n',
    );
    expect(w).toEqual([
      {
        path: '/models/b/aliases/0',
        line: 8,
        message: expect.stringContaining('Alias "gpt" is also an alias of model "a"'),
      },
    ]);
    expect(w[0]!.message).toContain('duplicate alias gpt found in model: b');
  });

  it('flags setParamsByID keys that collide with another model or alias', () => {
    const w = warningsOf(
      'models:\n  a:\n    cmd: x --port ${PORT}\n    aliases: [fast]\n  b:\n    cmd: y --port ${PORT}\n    ' +
        'filters:\n      setParamsByID:\n        a: {temperature: 0}\n        fast: {temperature: ' +
        '1}\n        b-cold: {temperature: 0}\n',
    );
    expect(w.map((x) => [x.path, x.line])).toEqual([
      ['/models/b/filters/setParamsByID/a', 9],
      ['/models/b/filters/setParamsByID/fast', 10],
    ]);
  });

  it('flags macro self-reference, later and undeclared references, and a 64-character name', () => {
    const long = 'm'.repeat(64);
    const w = warningsOf(
      `macros:\n  a: "\${a} x"\n  b: "\${c}"\n  c: "ok"\n  d: "\${nope}"\n  ${long}: v\nmodels:\n  m:\n    cmd: run --port \${PORT} \${missing} \${c}\n    cmdStop: kill \${PID}\n    proxy: http://127.0.0.1:\${PORT}/\${PID}\n`,
    );
    expect(w.map((x) => x.path)).toEqual([
      '/macros/a',
      '/macros/b',
      '/macros/d',
      `/macros/${long}`,
      '/models/m/cmd',
      '/models/m/proxy',
    ]);
    expect(w[0]!.message).toContain('refers to itself');
    expect(w[1]!.message).toContain('declared after it');
    expect(w[2]!.message).toContain('${nope}');
    expect(w[3]!.message).toContain('shorter than 64');
    expect(w[4]!.message).toContain('${missing} is not a declared macro');
    expect(w[5]!.message).toContain('${PID} is only available in cmdStop');
  });

  it('flags ${PORT} in proxy without ${PORT} in cmd, and a cmd without ${PORT} and no proxy', () => {
    const w = warningsOf(
      'models:\n  a:\n    cmd: x --port 9000\n    proxy: http://127.0.0.1:${PORT}\n  b:\n    cmd: y --port 9001\n  c:\n    cmd: ${srv}\n    macros:\n      srv: z --port ${PORT}\n',
    );
    expect(w.map((x) => x.path)).toEqual(['/models/a/proxy', '/models/b/cmd']);
    expect(w[1]!.message).toContain('default proxy');
  });

  it('flags a peer without models', () => {
    const w = warningsOf('models: {}\npeers:\n  other:\n    proxy: http://10.0.0.2:8080\n    models: []\n');
    expect(w.map((x) => [x.path, x.line])).toEqual([['/peers/other/models', 5]]);
  });

  it('flags group members listed twice, in two groups, or not models', () => {
    const w = warningsOf(
      'models:\n  a:\n    cmd: x --port ${PORT}\n  b:\n    cmd: y --port ${PORT}\ngroups:\n  g1:\n    ' +
        'members: [a, a]\n  g2:\n    members: [a, ghost, b]\n',
    );
    expect(w.map((x) => x.path)).toEqual(['/groups/g1/members/1', '/groups/g2/members/0', '/groups/g2/members/1']);
    expect(w[0]!.message).toContain('"a" is listed twice in group "g1"');
    expect(w[1]!.message).toContain('"a" is also a member of group "g1"; a model can be in one group only');
    expect(w[2]!.message).toContain('Group member "ghost" is not a model ID defined under models');
  });

  it('flags API keys with spaces', () => {
    const w = warningsOf('models: {}\napiKeys:\n  - good-key\n  - "bad key"\n');
    expect(w.map((x) => [x.path, x.line])).toEqual([['/apiKeys/1', 4]]);
  });

  it('flags ignorePaths that Go RE2 cannot compile', () => {
    const w = warningsOf(
      'models: {}\nupstream:\n  ignorePaths:\n    - "^/static/.*"\n    - "^/(?!api).*"\n    - "(a)\\\\1"\n',
    );
    expect(w.map((x) => x.path)).toEqual(['/upstream/ignorePaths/1', '/upstream/ignorePaths/2']);
    expect(re2Problem('^/(?<=x)')).toMatch(/look-behind/);
    expect(re2Problem('[(?=]\\(?=')).toBeUndefined();
    expect(re2Problem('.*\\.(js|json|css|png|gif|jpg|jpeg|ico|txt)$')).toBeUndefined();
  });

  it('flags profile targets that do not resolve, and accepts models, aliases, peer models and selectors', () => {
    const w = warningsOf(
      [
        'models:',
        '  a:',
        '    cmd: x --port ${PORT}',
        '    aliases: [fast]',
        'peers:',
        '  far:',
        '    proxy: http://10.0.0.2:8080',
        '    models: [big]',
        'selectors:',
        '  pick:',
        '    strategy: warm',
        '    targets: [a, far/big, big]',
        'profiles:',
        '  p:',
        '    pins:',
        '      x1: a',
        '      x2: fast',
        '      x3: far/big',
        '      x4: pick',
        '      x5: ghost',
        '      x6: ~',
        '',
      ].join('\n'),
    );
    expect(w.map((x) => [x.path, x.line])).toEqual([['/profiles/p/pins/x5', 20]]);
  });

  it('gives config.example.yaml no error, only the loader warnings its illustrative parts earn', () => {
    const result = check(fixtureBytes('llama-swap/config.example.yaml').toString('utf8'));
    expect(result.errors).toEqual([]);
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
    for (const w of result.warnings) expect(w.line).not.toBeNull();
  });
});

describe('format', () => {
  it('re-prints YAML without folding long lines, keeping comments, a BOM and CRLF', () => {
    const long =
      'llama-server --port ${PORT} -m /models/a-very-long-model-file-name-that-goes-on-and-on.gguf ' +
      '--ctx-size 32768 --flash-attn';
    const text = `\uFEFF# top comment\r\nmodels:\r\n    a:   {cmd: "${long}"}   # inline\r\n`;
    const result = formatConfigText(text);
    expect(result).toEqual({
      ok: true,
      text: `\uFEFF# top comment\r\nmodels:\r\n  a: { cmd: "${long}" } # inline\r\n`,
    });
  });

  it('keeps the meaning of config.example.yaml', () => {
    const text = fixtureBytes('llama-swap/config.example.yaml').toString('utf8');
    const result = formatConfigText(text);
    if (!result.ok) throw new Error('format failed');
    expect(check(result.text).errors).toEqual([]);
    expect(result.text).toContain('# llama-swap YAML configuration example');
  });

  it('refuses text that does not parse', () => {
    const result = formatConfigText('a: [1\n');
    expect(result.ok).toBe(false);
  });
});
