/**
 * Vitest globalSetup of the browser project: one Chromium for the whole run, whose endpoint every
 * browser test file connects to, instead of each file starting its own. Each file still gets
 * fresh contexts (no shared cookies or storage). Without Chromium nothing is started here, and
 * each file fails in `launchBrowser` with the reason.
 */
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import type { TestProject } from 'vitest/node';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './chromium.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared Chromium's WebSocket endpoint; empty when none was started. */
    chromiumEndpoint: string;
  }
}

export default async function startChromium(project: TestProject): Promise<() => Promise<void>> {
  if (!existsSync(CHROMIUM_PATH)) {
    project.provide('chromiumEndpoint', '');
    return async () => undefined;
  }
  const server = await chromium.launchServer({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  project.provide('chromiumEndpoint', server.wsEndpoint());
  return () => server.close();
}
