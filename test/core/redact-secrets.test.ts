/**
 * What `redactSecrets` hides in a path or a log line: anything shaped like an API key and every
 * `Bearer` value, and nothing else.
 */
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-keys.js';
import { redactSecrets } from '../../src/core/redact-secrets.js';

describe('redactSecrets', () => {
  it('hides a Gatehouse key wherever it sits in a path', () => {
    const { secret } = generateApiKey();
    for (const [path, redacted] of [
      [`/v1/${secret}/chat/completions`, '/v1/sk-[redacted]/chat/completions'],
      [`/${secret}`, '/sk-[redacted]'],
      [`/v1/%20${secret}/models`, '/v1/%20sk-[redacted]/models'],
      [`/v1/models?key=${secret}&x=1`, '/v1/models?key=sk-[redacted]&x=1'],
      [`/v1/${secret.slice(0, 25)}/chat`, '/v1/sk-[redacted]/chat'],
    ]) {
      expect(redactSecrets(path!)).toBe(redacted);
    }
  });

  it('hides OpenAI-shaped keys and Bearer values, with their separator as written', () => {
    expect(redactSecrets('/v1/sk-proj-AbCdEf0123456789_xyz/chat')).toBe('/v1/sk-[redacted]/chat');
    expect(redactSecrets('/v1/Bearer%20a.b.c/chat')).toBe('/v1/Bearer%20[redacted]/chat');
    expect(redactSecrets('/v1/bearer+tok/chat')).toBe('/v1/bearer+[redacted]/chat');
    expect(redactSecrets('auth: Bearer tok-1 from "x"\nBearer\nnext line')).toBe(
      'auth: Bearer [redacted] from "x"\nBearer\nnext line',
    );
  });

  it('leaves ordinary paths and words alone', () => {
    for (const text of [
      '/v1/chat/completions',
      '/v1/models/disk-usage-monitoring-model',
      '/v1/sk-short',
      '[INFO] Request 127.0.0.1 "POST /v1/messages HTTP/1.1" 200 12 "task-runner-agent-v2" 1ms',
    ]) {
      expect(redactSecrets(text)).toBe(text);
    }
  });
});
