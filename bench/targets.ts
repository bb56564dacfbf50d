/** What the bench measures against: the upstream directly, the floor proxy, and one gateway per scenario. */

export type TargetKind = 'direct' | 'floor' | 'gateway';

export interface Target {
  id: string;
  /** Short name printed in tables. */
  label: string;
  kind: TargetKind;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** The process whose CPU time and memory are read (the upstream for `direct`). */
  pid: number;
  /** Headers every request to this target carries (a scenario's, e.g. an API key). */
  headers: Readonly<Record<string, string>>;
  /** For gateways: the scenario id (bench/scenarios.ts). */
  scenarioId?: string;
}

export const byKind = (targets: readonly Target[], kind: TargetKind) => targets.filter((t) => t.kind === kind);

/** The target order for round `round`: rotated each round so no target always runs first or last. */
export function rotated<T>(items: readonly T[], round: number): T[] {
  const shift = items.length === 0 ? 0 : round % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}
