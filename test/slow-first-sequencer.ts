import { statSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Starts the longest files first across every project, so that the run does not end with one
 * worker finishing a minute-long file alone. Vitest's own order runs the projects one after
 * another by name and, in a fresh clone without its results cache, larger files first.
 *
 * With the cache (a second run on one machine) the order is by last duration. Without it, by the
 * file's size weighed by its project: a line of a process test (it starts CLIs, replicas, the demo)
 * costs more than a line of a browser test, which costs more than one of an in-process test.
 */
const COST_PER_BYTE: Record<string, number> = { processes: 3, browser: 1, load: 2, mocking: 0.5, 'in-process': 0.3 };

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const key = (file: TestSpecification) =>
      `${file.project.name}:${file.moduleId.slice(this.ctx.config.root.length + 1)}`;
    const durations = files.map((file) => cache.getFileTestResults(key(file))?.duration);
    const weights = durations.every((duration) => duration !== undefined)
      ? durations.map((duration) => duration ?? 0)
      : files.map((file) => statSync(file.moduleId).size * (COST_PER_BYTE[file.project.name] ?? 1));
    return files
      .map((file, index) => ({ file, weight: weights[index] ?? 0 }))
      .sort((a, b) => b.weight - a.weight)
      .map(({ file }) => file);
  }
}
