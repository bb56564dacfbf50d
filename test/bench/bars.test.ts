import { describe, expect, it } from 'vitest';
import { judgeBars } from '../../bench/bars.js';
import { medianReport } from '../../bench/judge.js';
import type { LoadCellResult, TargetLoadResult } from '../../bench/load-suite.js';
import type { BenchReport } from '../../bench/report.js';

const gateways = [{ id: 'gateway:keyed', scenarioId: 'keyed' }];

function row(targetId: string, p50Ms: number, p99Ms: number, cpuUsPerReq: number): TargetLoadResult {
  return { targetId, rps: 1000, p50Ms, p99Ms, cpuUsPerReq, rpsSpread: 0, errors: 0, non2xx: 0, rounds: [] };
}

function cells(gatewayCpuAt50: number, gatewayOpenP99: number, floorOpenP99: number): LoadCellResult[] {
  return [
    {
      workload: 'json',
      connections: 1,
      targets: [row('direct', 0.1, 0.3, 40), row('floor', 0.2, 0.5, 50), row('gateway:keyed', 0.3, 5.3, 120)],
    },
    {
      workload: 'json',
      connections: 50,
      targets: [row('direct', 1, 3, 30), row('floor', 5, 9, 50), row('gateway:keyed', 9, 20, gatewayCpuAt50)],
    },
    {
      workload: 'json',
      connections: 1,
      ratePerSecond: 200,
      targets: [
        row('direct', 0.5, 1.0, 60),
        row('floor', 0.7, floorOpenP99, 90),
        row('gateway:keyed', 0.8, gatewayOpenP99, 200),
      ],
    },
  ];
}

const byId = (bars: ReturnType<typeof judgeBars>) => new Map(bars.map((b) => [b.id, b]));

describe('bench bars', () => {
  it('judges CPU per call at 50 connections against 3× the floor, and the closed-loop p99 not at all', () => {
    const bars = byId(judgeBars(gateways, cells(160, 1.5, 1.5), undefined, []));
    expect(bars.get('json-50c-cpu-ratio')).toMatchObject({ value: 3.2, limit: 3, pass: false });
    expect(bars.get('json-1c-added-p50')).toMatchObject({ limit: 0.3, pass: true });
    expect(bars.has('json-1c-added-p99')).toBe(false);
  });

  it('allows the open loop an added p99 of 1 ms, or 3× the floor when the floor adds more', () => {
    const quiet = byId(judgeBars(gateways, cells(100, 2.2, 1.2), undefined, []));
    expect(quiet.get('json-open-loop-added-p99')).toMatchObject({ limit: 1, pass: false });
    const busy = byId(judgeBars(gateways, cells(100, 2.2, 1.5), undefined, []));
    expect(busy.get('json-open-loop-added-p99')).toMatchObject({ limit: 1.5, pass: true });
  });

  it('judges --judge runs on the median of their numbers', () => {
    const report = (gatewayCpuAt50: number): BenchReport =>
      ({
        meta: { code: 'abc', quick: false },
        targets: [
          { id: 'direct', label: 'direct', kind: 'direct' },
          { id: 'floor', label: 'floor', kind: 'floor' },
          { id: 'gateway:keyed', label: 'gateway keyed', kind: 'gateway', scenarioId: 'keyed' },
        ],
        load: cells(gatewayCpuAt50, 1.5, 1.5),
        paced: undefined,
        rss: [],
        bars: [],
      }) as unknown as BenchReport;
    const merged = medianReport([report(100), report(200), report(140)], ['a', 'b', 'c']);
    expect(merged.load[1]!.targets[2]!.cpuUsPerReq).toBe(140);
    expect(byId(merged.bars).get('json-50c-cpu-ratio')).toMatchObject({ value: 2.8, pass: true });
    expect(merged.meta.medianOf).toEqual(['a', 'b', 'c']);
  });
});
