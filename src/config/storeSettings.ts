/**
 * What the config says about the store, in a module of its own: the store reads it without loading the schema,
 * which takes every platform's section.
 */

/** Distinct metric names a run may have when the config says nothing (`ingest.maxMetricNames`): a log with a million
 * distinct keys took backfill to 1.33 GB and `/run status` to 6.4 s. */
export const DEFAULT_MAX_METRIC_NAMES = 10_000;

/** Whether `--db`, RLWATCH_DB or the config's `db` names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//.test(db);
}
