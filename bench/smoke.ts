/**
 * Before measuring: every target must answer the JSON and SSE requests correctly, so a
 * misconfigured gateway (401, 502...) fails the bench instead of producing fast error numbers.
 */
import { request } from 'node:http';
import { requestFor, type Workload } from './load-suite.js';
import type { Target } from './targets.js';

export async function checkTargets(targets: readonly Target[]): Promise<void> {
  for (const target of targets) {
    for (const workload of ['json', 'sse'] as const) {
      const { status, contentType, body } = await send(target, workload);
      const ok =
        status === 200 &&
        (workload === 'json'
          ? contentType.startsWith('application/json') && body.includes('"chat.completion"')
          : contentType.startsWith('text/event-stream') && body.endsWith('data: [DONE]\n\n'));
      if (!ok)
        throw new Error(
          `${target.label} (${target.url}) answered the ${workload} request wrongly: ${status} ` +
            `${contentType}\n${body.slice(0, 500)}`,
        );
    }
  }
}

function send(target: Target, workload: Workload): Promise<{ status: number; contentType: string; body: string }> {
  const req = requestFor(workload, target.headers);
  return new Promise((resolve, reject) => {
    const r = request(
      `${target.url}${req.path}`,
      { method: req.method, headers: req.headers, agent: false, timeout: 5000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => (body += text));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body }),
        );
        res.on('error', reject);
      },
    );
    r.on('timeout', () => r.destroy(new Error(`${target.label}: no answer within 5 s`)));
    r.on('error', reject);
    r.end(req.body);
  });
}
