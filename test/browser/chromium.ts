/**
 * The Chromium the browser tests drive: Debian's (/usr/bin/chromium; CI installs it in .ci/run),
 * with flags that turn off its own background traffic. `chromium-server.ts` starts one for the
 * whole run; `launchBrowser` in helpers.ts connects to it.
 */
import { existsSync } from 'node:fs';

export const CHROMIUM_PATH = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** Fails (never skips) when Chromium is missing: a browser test that cannot run is a failure. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}; the dashboard's browser tests need it. ` +
        'Install it with `apt-get update && apt-get install -y chromium` (.ci/run does this in CI).',
    );
  }
}
