/**
 * Loaded into a gateway with `node --import` by promoted-per-call.ts: the first SIGUSR2 starts
 * V8's sampling heap profiler, counting objects that lived until a full collection (the ones a
 * young-generation collection had to copy and promote) and leaving out those a young collection
 * freed; the second SIGUSR2 writes the profile to HEAP_SAMPLES_OUT.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const post = (method: string, params?: object): Promise<unknown> =>
  new Promise((resolve, reject) =>
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
  );

let sampling = false;
process.on('SIGUSR2', () => {
  void (async () => {
    if (!sampling) {
      sampling = true;
      await post('HeapProfiler.startSampling', {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: false,
      });
      return;
    }
    const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: unknown };
    writeFileSync(process.env.HEAP_SAMPLES_OUT ?? 'heap-samples.json', JSON.stringify(profile));
  })();
});
