/** Settings that must be refused: the message `loadSettings` gives, or a failed expectation. */
import { expect } from 'vitest';
import { loadSettings, SettingsError } from '../../src/settings/index.js';

export function settingsError(env: NodeJS.ProcessEnv): string {
  try {
    loadSettings(env);
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError);
    return (error as Error).message;
  }
  throw new Error('expected loadSettings to throw');
}
