/** Names of keys created with one click on the Endpoints page: the client's name, kept apart. */
import { describe, expect, it } from 'vitest';
import { keyNameFor } from '../../web/src/lib/endpoints.js';

describe('one-click key names', () => {
  it('uses the client’s name while no key has it', () => {
    expect(keyNameFor('curl', ['laptop'])).toBe('curl');
    expect(keyNameFor('  openai (Python) ')).toBe('openai (Python)');
    expect(keyNameFor('   ')).toBe('Client');
  });

  it('adds the first free number when the name is taken, so repeated clicks make distinct keys', () => {
    const names: string[] = [];
    for (let i = 0; i < 4; i++) names.push(keyNameFor('curl', names));
    expect(names).toEqual(['curl', 'curl-2', 'curl-3', 'curl-4']);
    expect(keyNameFor('curl', ['curl', 'curl-3'])).toBe('curl-2');
  });

  it('stays within the 100 characters a key name may have', () => {
    const long = 'x'.repeat(120);
    const first = keyNameFor(long);
    const second = keyNameFor(long, [first]);
    expect(first).toHaveLength(100);
    expect(second).toHaveLength(100);
    expect(second.endsWith('-2')).toBe(true);
  });
});
