/** Starts a worker thread from its own entry, in the bundle (dist/) or from the sources through tsx. */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A worker thread running the entry `name` that sits beside the calling module (`base`: its `import.meta.url`):
 * dist/<name>.js in the bundle (scripts/build.mjs makes each worker an entry of its own), the TypeScript source when
 * running from sources (tsx, vitest), which the worker loads through tsx.
 */
export function spawnWorker(base: string, name: string, options: WorkerOptions): Worker {
  const fromSources = base.endsWith('.ts');
  const entry = new URL(`./${name}${fromSources ? '.ts' : '.js'}`, base);
  if (!fromSources) return new Worker(entry, options);
  const tsx = import.meta.resolve('tsx/esm/api');
  const [api, source] = [JSON.stringify(tsx), JSON.stringify(entry.href)];
  const load = `import(${api}).then((m) => { m.register(); return import(${source}); })`;
  return new Worker(load, { ...options, eval: true });
}
