/**
 * Vitest globalSetup of the browser project: one Chromium per Vitest worker for the whole run,
 * which the browser test files of that worker connect to, instead of each file starting its own.
 * Files running at the same time never share a browser process; the run's Chromium CPU is the
 * same either way. Each file still gets fresh contexts (no shared cookies or storage).
 * Without Chromium nothing is started here, and each file fails in `launchBrowser`.
 */
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import type { TestProject } from 'vitest/node';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './chromium.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The WebSocket endpoints of the shared Chromiums, one per worker; empty when none was started. */
    chromiumEndpoints: string[];
  }
}

export default async function startChromium(project: TestProject): Promise<() => Promise<void>> {
  if (!existsSync(CHROMIUM_PATH)) {
    project.provide('chromiumEndpoints', []);
    return async () => undefined;
  }
  const workers = Math.max(1, project.config.maxWorkers);
  const servers = await Promise.all(
    Array.from({ length: workers }, () =>
      chromium.launchServer({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS }),
    ),
  );
  project.provide(
    'chromiumEndpoints',
    servers.map((server) => server.wsEndpoint()),
  );
  return async () => {
    await Promise.all(servers.map((server) => server.close()));
  };
}
