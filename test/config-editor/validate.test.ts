import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ValidateFunction } from 'ajv';
import { bundledSchema } from '../../src/config-editor/bundled-schema.js';
import { compileConfigSchema } from '../../src/config-editor/schema-source.js';
import { formatConfigText } from '../../src/config-editor/format.js';
import { re2Problem } from '../../src/config-editor/loader-checks.js';
import { validateConfigText, type ConfigIssue } from '../../src/config-editor/validate.js';
import { SCHEMA_PATH, testConfig } from './helpers.js';

const schema: ValidateFunction = compileConfigSchema(await bundledSchema());
const check = (text: string) => validateConfigText(text, schema);
const brief = (issues: ConfigIssue[]) =>
  issues.map((i) => ({ message: i.message, path: i.path, line: i.line, column: i.column }));

/** The valid configs in ./configs; between them they use every top-level key of the published schema. */
const VALID = ['every-key.yaml', 'matrix.yaml', 'matrix-router.yaml'];

describe('config files written for the tests (./configs)', () => {
  it('accepts every-key.yaml and both matrix configs with no error and no loader warning', () => {
    for (const file of VALID) {
      const result = check(testConfig(file));
      expect(brief(result.errors), file).toEqual([]);
      expect(brief(result.warnings), file).toEqual([]);
    }
  });

  it('uses every top-level key of the published schema between them', () => {
    const used = new Set(VALID.flatMap((file) => Object.keys(parse(testConfig(file)) as object)));
    const published = JSON.parse(readFileSync(SCHEMA_PATH(), 'utf8')) as { properties: object };
    const known = Object.keys(published.properties);
    expect(known.filter((key) => !used.has(key))).toEqual([]);
  });

  it('rejects profiles in the old list syntax, pointing at the list', () => {
    const text = testConfig('profiles-as-list.yaml');
    const result = check(text);
    expect(brief(result.errors)).toEqual([
      { message: '/profiles/pair must be object', path: '/profiles/pair', line: 9, column: 5 },
    ]);
    expect(result.errors[0]!.kind).toBe('schema');
    const first = result.errors[0]!;
    expect(text.split('\n')[first.line! - 1]!.slice(first.column! - 1)).toBe('- coder');
  });

  it('reports a Jinja template as YAML errors, the first at the % of its first tag, and runs no schema check', () => {
    const text = testConfig('jinja-template.yaml');
    const result = check(text);
    expect(result.errors.every((e) => e.kind === 'yaml')).toBe(true);
    expect(brief(result.errors.slice(0, 1))).toEqual([
      { message: 'Plain value cannot start with directive indicator character %', path: '', line: 3, column: 4 },
    ]);
    expect(text.split('\n')[2]!.slice(3)).toMatch(/^% for /);
  });

  it('reports -config-dir fragments as incomplete on their own: an empty models map, no models at all', () => {
    const defaults = check(testConfig('config-dir/00-defaults.yaml'));
    expect(brief(defaults.errors)).toEqual([
      { message: '/models must be object', path: '/models', line: 10, column: 1 },
    ]);
    const model = check(testConfig('config-dir/coder.yaml'));
    expect(brief(model.errors)).toEqual([
      { message: "/ must have required property 'models'", path: '', line: 3, column: 1 },
    ]);
    expect([defaults, model].map((r) => r.errors[0]!.kind)).toEqual(['schema', 'schema']);
  });
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

  it('flags router group members, selector targets and profile pins that name no model', () => {
    const w = warningsOf(
      [
        'models:',
        '  a:',
        '    cmd: x --port ${PORT}',
        'selectors:',
        '  pick:',
        '    strategy: spillover',
        '    targets: [a, ghost-1]',
        'profiles:',
        '  p:',
        '    pins:',
        '      slot: ghost-2',
        'routing:',
        '  router:',
        '    use: group',
        '    settings:',
        '      groups:',
        '        g:',
        '          members: [ghost-3, a]',
        '',
      ].join('\n'),
    );
    expect(w.map((x) => [x.path, x.line])).toEqual([
      ['/routing/router/settings/groups/g/members/0', 18],
      ['/selectors/pick/targets/1', 7],
      ['/profiles/p/pins/slot', 11],
    ]);
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

  it('keeps the meaning and the comments of every-key.yaml', () => {
    const text = testConfig('every-key.yaml');
    const result = formatConfigText(text);
    if (!result.ok) throw new Error('format failed');
    expect(check(result.text).errors).toEqual([]);
    expect(result.text).toContain("# A config written for Gatehouse's tests");
  });

  it('refuses text that does not parse', () => {
    const result = formatConfigText('a: [1\n');
    expect(result.ok).toBe(false);
  });
});
