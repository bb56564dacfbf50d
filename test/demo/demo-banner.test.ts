/**
 * `npm run demo`'s banner: the dashboard and, while the admin password is still to be chosen,
 * the one-time setup link are plain lines of their own, and both work.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { requireDashboardBuild } from '../browser/helpers.js';
import { rawRequest } from '../helpers/http.js';
import { freshDemoDataDir, startDemo, type DemoProcess } from '../helpers/demo.js';

const running: DemoProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((demo) => demo.stop()));
});

async function demo(dataDir?: string): Promise<DemoProcess> {
  const started = await startDemo(dataDir);
  running.push(started);
  return started;
}

/** The address on a banner line `    <label>   <address>`. */
function addressOn(lines: string[], label: string): string | undefined {
  const line = lines.find((l) => l.startsWith(`    ${label} `));
  return line?.slice(4 + label.length).trim();
}

describe('the demo banner', () => {
  it('prints the dashboard and the one-time setup link as plain lines, and the link sets the password', async () => {
    requireDashboardBuild();
    const d = await demo();
    const dashboard = addressOn(d.bannerLines, 'Dashboard');
    const setup = addressOn(d.bannerLines, 'First-run setup (once)');
    expect(dashboard).toBe(`${d.gatewayUrl}/`);
    expect(setup).toMatch(new RegExp(`^${d.gatewayUrl.replace(/[.]/g, '\\.')}/setup#token=[A-Za-z0-9_-]+$`));
    // Plain text, not inside a JSON log line.
    for (const address of [dashboard, setup])
      expect(d.bannerLines.some((l) => l.includes(address!) && !l.includes('{'))).toBe(true);

    const page = await rawRequest(dashboard!);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);

    const token = new URL(setup!).hash.slice('#token='.length);
    const res = await rawRequest(`${d.gatewayUrl}/api/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: d.gatewayUrl, 'sec-fetch-site': 'same-origin' },
      body: JSON.stringify({ token, password: 'demo admin password' }),
    });
    expect(res.status, res.body.toString()).toBe(200);
  });

  it('prints no setup link once the password is chosen, and still the dashboard', async () => {
    const dataDir = freshDemoDataDir();
    const first = await demo(dataDir);
    const setup = addressOn(first.bannerLines, 'First-run setup (once)')!;
    const res = await rawRequest(`${first.gatewayUrl}/api/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: first.gatewayUrl, 'sec-fetch-site': 'same-origin' },
      body: JSON.stringify({ token: new URL(setup).hash.slice('#token='.length), password: 'demo admin password' }),
    });
    expect(res.status).toBe(200);
    expect(await first.stop()).toBe(0);
    running.splice(running.indexOf(first), 1);

    const second = await demo(dataDir);
    expect(addressOn(second.bannerLines, 'Dashboard')).toBe(`${second.gatewayUrl}/`);
    expect(addressOn(second.bannerLines, 'First-run setup (once)')).toBeUndefined();
    expect(second.output()).not.toContain('/setup#token=');
  });
});
