/** A store that answers each read a report repeats once, to spare PostgreSQL's round trips. */
import type { StoreTx } from '../store/contract.ts';

/** The reads a report repeats: the epochs (its window, each milestone, each judged range), a metric's series (its
 * range, then its judge), the run's metric names and meta. */
const HELD: ReadonlySet<string> = new Set([
  'points.series',
  'points.metricsOf',
  'events.meta',
  'points.latest',
  'points.steps',
  'alerts.list',
]);

/**
 * `store`, with each of the reads a report repeats asked of it once (the same arguments, the same answer): one
 * report asked for ~14 series, a third of them the epochs again, and on PostgreSQL each is a round trip. A report
 * reads one moment of a run, so an answer held for the length of one build is that moment's. Arrays are handed out
 * as copies: a caller may sort or reverse what it got.
 */
export function readOnce(store: StoreTx): StoreTx {
  const held = new Map<string, Promise<unknown>>();
  const family = (table: object, prefix: string): object =>
    new Proxy(table, {
      get(target, name) {
        const value: unknown = Reflect.get(target, name, target);
        const path = `${prefix}.${String(name)}`;
        if (typeof value !== 'function' || !HELD.has(path)) return value;
        return (...args: unknown[]) => {
          const key = `${path} ${JSON.stringify(args)}`;
          let read = held.get(key);
          if (!read) held.set(key, (read = Promise.resolve(value.apply(target, args))));
          return read.then((v) => (Array.isArray(v) ? [...v] : v));
        };
      },
    });
  return new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value === 'function') return value.bind(target);
      return typeof value === 'object' && value !== null ? family(value, String(name)) : value;
    },
  });
}
