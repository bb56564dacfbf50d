/**
 * A person signing in through the test OpenID Provider without a browser: a cookie jar per
 * host and the provider's own login form, posted as a browser would. Each step returns the raw
 * response, so a test can stop anywhere, change what an attacker could change, and go on.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import { expect } from 'vitest';
import { rawRequest, type RawResponse } from './http.js';

/** Cookies by host (ports share cookies, as in browsers); paths and expiry as far as tests need. */
export class CookieJar {
  readonly #byHost = new Map<string, Map<string, string>>();

  header(url: string): string | undefined {
    const cookies = this.#byHost.get(new URL(url).hostname);
    if (!cookies || cookies.size === 0) return undefined;
    return [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  get(url: string, name: string): string | undefined {
    return this.#byHost.get(new URL(url).hostname)?.get(name);
  }

  set(url: string, name: string, value: string): void {
    const host = new URL(url).hostname;
    const cookies = this.#byHost.get(host) ?? new Map<string, string>();
    cookies.set(name, value);
    this.#byHost.set(host, cookies);
  }

  store(url: string, res: RawResponse): void {
    for (const line of res.headers['set-cookie'] ?? []) {
      const [pair = '', ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || /expires=.*1970/i.test(a));
      if (expired || value === '') this.#byHost.get(new URL(url).hostname)?.delete(name);
      else this.set(url, name, value);
    }
  }
}

/** A GET (or form POST) with the jar's cookies; the answer's cookies go into the jar. */
export async function browse(
  jar: CookieJar,
  url: string,
  options: { form?: Record<string, string>; headers?: OutgoingHttpHeaders } = {},
): Promise<RawResponse> {
  const headers: OutgoingHttpHeaders = { ...options.headers };
  const cookie = jar.header(url);
  if (cookie) headers.cookie = cookie;
  let body: string | undefined;
  if (options.form) {
    body = new URLSearchParams(options.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const res = await rawRequest(url, { method: options.form ? 'POST' : 'GET', headers, body });
  jar.store(url, res);
  return res;
}

/** The absolute `Location` of a redirect, or a failed expectation. */
export function location(res: RawResponse, base: string): string {
  expect([302, 303], `expected a redirect, got ${res.status}: ${res.body.toString()}`).toContain(res.status);
  return new URL(res.headers.location!, base).href;
}

/**
 * From the provider's authorization URL to the redirect back to the client: the login page's
 * form posted with `login` (any password: the development login page checks none).
 */
export async function loginAtProvider(jar: CookieJar, authorizationUrl: string, login: string): Promise<URL> {
  const interaction = location(await browse(jar, authorizationUrl), authorizationUrl);
  const page = await browse(jar, interaction);
  expect(page.status, page.body.toString()).toBe(200);
  const action = /<form[^>]*action="([^"]+)"/.exec(page.body.toString())?.[1];
  expect(action, 'the login form').toBeDefined();
  const submitted = await browse(jar, new URL(action!, interaction).href, {
    form: { prompt: 'login', login, password: 'any password' },
  });
  const resume = location(submitted, interaction);
  return new URL(location(await browse(jar, resume), resume));
}
