/**
 * What `npm run demo` prints once both servers listen: every address to open or point a client
 * at, one per line, and the first-run setup link while the admin password is still to be chosen.
 */

export interface DemoAddresses {
  /** The gateway as a browser on this machine reaches it (dashboard and /v1 share it). */
  gateway: string;
  simulator: string;
  setupLink: string | undefined;
  /** What the simulator plays (default llama-swap). */
  upstream?: 'llama-swap' | 'llama-server';
}

export function demoBanner({ gateway, simulator, setupLink, upstream = 'llama-swap' }: DemoAddresses): string {
  const setup = setupLink
    ? [
        `    First-run setup (once)        ${setupLink}`,
        '',
        '  Open the setup link to choose the admin password; it works once, and only until the demo restarts.',
        '',
      ]
    : [''];
  return [
    '',
    `  Gatehouse demo is running (no GPU needed: ${upstream} is simulated).`,
    '',
    `    Dashboard                     ${gateway}/`,
    ...setup,
    `    Gateway (OpenAI base URL)     ${gateway}/v1`,
    `    Gateway (Anthropic base URL)  ${gateway}`,
    `    ${`${upstream} simulator`.padEnd(30)}${simulator}`,
    '',
    '  Try:',
    `    curl ${gateway}/v1/models`,
    `    curl ${gateway}/v1/chat/completions -H 'Content-Type: application/json' \\`,
    `      -d '{"model":"qwen","stream":true,"messages":[{"role":"user","content":"Hello"}]}'`,
    '',
    '  Ctrl-C stops both.',
    '',
  ].join('\n');
}
