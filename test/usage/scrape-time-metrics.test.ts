import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerScrapeTimeMetric, ScrapeTimeMetric, SecondsHistogram } from '../../src/usage/scrape-time-metrics.js';

const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
// On a bound (inclusive), between bounds, below the first, above the last, and zero.
const SAMPLES = [0, 0.001, 0.005, 0.0050001, 0.01, 0.3, 1, 1, 299.9, 300, 300.5, 10_000];

describe('scrape-time metrics', () => {
  it('formats a histogram exactly as prom-client formats the same observations', async () => {
    const theirs = new Registry();
    const reference = new Histogram({ name: 'h_seconds', help: 'help text', labelNames: ['model', 'key'], buckets: BOUNDS, registers: [theirs] });
    const ours = new Registry();
    const histogram = new SecondsHistogram(BOUNDS);
    registerScrapeTimeMetric(ours, new ScrapeTimeMetric('h_seconds', 'help text', 'histogram', () => histogram.values('h_seconds', { model: 'qwen', key: 'ci' })));
    for (const value of SAMPLES) {
      reference.observe({ model: 'qwen', key: 'ci' }, value);
      histogram.observe(value);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('counts a value on a bound in that bound, and one above every bound only in +Inf', () => {
    const histogram = new SecondsHistogram([1, 2]);
    for (const value of [1, 2, 2.5]) histogram.observe(value);
    const lines = histogram.values('x', {}).map((v) => [v.metricName, v.labels.le, v.value]);
    expect(lines).toEqual([
      ['x_bucket', 1, 1],
      ['x_bucket', 2, 2],
      ['x_bucket', '+Inf', 3],
      ['x_sum', undefined, 5.5],
      ['x_count', undefined, 3],
    ]);
  });

  it('reports counters as they are when scraped, never reset by a scrape', async () => {
    const registry = new Registry();
    let calls = 0;
    registerScrapeTimeMetric(registry, new ScrapeTimeMetric('c_total', 'calls', 'counter', () => [{ labels: { model: 'a' }, value: calls }]));
    calls = 3;
    expect(await registry.metrics()).toContain('c_total{model="a"} 3\n');
    registry.resetMetrics();
    calls = 5;
    expect(await registry.metrics()).toContain('c_total{model="a"} 5\n');
  });
});
