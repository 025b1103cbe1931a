/** Events read from a run's logs (errors, warnings, the end of training, run facts), in file order, on SQLite. */
import type { Database } from 'better-sqlite3';
import type { EventRecord } from './records.ts';
import { HeldEvents } from './heldEvents.ts';
import { prepared } from './sqlite/prepared.ts';

export interface EventRow {
  id: number;
  runId: number;
  step: number;
  kind: EventRecord['kind'];
  title: string;
  text: string;
  fatal: boolean;
  context: string[];
  values: Record<string, number>;
  config: Record<string, string>;
  at: number;
}

export interface Raw {
  id: number;
  run_id: number;
  step: number;
  kind: EventRecord['kind'];
  title: string;
  text: string;
  fatal: number;
  context: string | null;
  vals: string | null;
  config: string | null;
  at: number;
}

export const fromRow = (r: Raw): EventRow => ({
  id: r.id,
  runId: r.run_id,
  step: r.step,
  kind: r.kind,
  title: r.title,
  text: r.text,
  fatal: r.fatal === 1,
  context: r.context ? (JSON.parse(r.context) as string[]) : [],
  values: r.vals ? (JSON.parse(r.vals) as Record<string, number>) : {},
  config: r.config ? (JSON.parse(r.config) as Record<string, string>) : {},
  at: r.at,
});

/** Events read from a run's logs (errors, warnings, the end of training, run facts), in file order. */
export class Events {
  /** what the rules read of the events of the runs this process writes (`writing`), until a batch writes some */
  private readonly held = new HeldEvents();
  private readonly written = new Set<number>();

  constructor(private readonly db: Database) {}

  /** This process writes the run's batches (call in each): what is read of its events may be held until one of its
   * batches writes some. A process that only reads (a command beside `start`) holds nothing. */
  writing(runId: number): void {
    this.written.add(runId);
  }

  /** A transaction that may have written the run's events rolled back (or the run was removed): read them again. */
  forget(runId?: number): void {
    this.held.forget(runId);
    if (runId === undefined) this.written.clear();
    else this.written.delete(runId);
  }

  private heldOr<T>(runId: number, key: string, read: () => T): T {
    return this.written.has(runId) ? this.held.get(runId, key, read) : read();
  }

  /** Call inside the batch transaction; each event carries the step it is filed under. A `meta` event that
   * repeats the run's last one (trainer_state.json is re-read whole on every save) is not stored again. */
  write(runId: number, fileId: number, events: ReadonlyArray<EventRecord & { step: number }>, at: number): void {
    const stmt = prepared(
      this.db,
      `INSERT INTO events (run_id, file_id, step, kind, title, text, fatal, context, vals, config, at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const lastMeta = prepared(
      this.db,
      `SELECT title, vals, config FROM events WHERE run_id = ? AND kind = 'meta' ORDER BY id DESC LIMIT 1`,
    );
    const json = (v: object | undefined): string | null => (v === undefined ? null : JSON.stringify(v));
    for (const e of events) {
      if (e.kind === 'meta') {
        const last = lastMeta.get(runId) as { title: string; vals: string | null; config: string | null } | undefined;
        if (last && last.title === e.title && last.vals === json(e.values) && last.config === json(e.config)) continue;
      }
      const fatal = e.fatal ? 1 : 0;
      stmt.run(
        runId,
        fileId,
        e.step,
        e.kind,
        e.title,
        e.text,
        fatal,
        json(e.context),
        json(e.values),
        json(e.config),
        at,
      );
    }
    this.held.wrote(runId);
  }

  /** Events of some kinds with an id above `afterId`, oldest first. */
  after(runId: number, kinds: ReadonlyArray<EventRecord['kind']>, afterId: number): EventRow[] {
    return this.heldOr(runId, `after ${afterId} ${kinds.join()}`, () => {
      const rows = prepared(
        this.db,
        `SELECT * FROM events WHERE run_id = ? AND id > ? AND kind IN (${kinds.map(() => '?').join(', ')}) ORDER BY id`,
      ).all(runId, afterId, ...kinds) as Raw[];
      return rows.map(fromRow);
    });
  }

  byId(id: number): EventRow | undefined {
    const r = prepared(this.db, 'SELECT * FROM events WHERE id = ?').get(id) as Raw | undefined;
    return r && fromRow(r);
  }

  /** The latest value of each number the run's `meta` events gave (total_steps, max_steps, ...). */
  meta(runId: number): Record<string, number> {
    return this.heldOr(runId, 'meta', () => {
      const rows = prepared(
        this.db,
        `SELECT vals FROM events WHERE run_id = ? AND kind = 'meta' AND vals IS NOT NULL ORDER BY id`,
      )
        .pluck()
        .all(runId) as string[];
      return Object.assign({}, ...rows.map((v) => JSON.parse(v) as Record<string, number>)) as Record<string, number>;
    });
  }

  /** The configuration the run's `meta` events printed, later values over earlier ones (for reports). */
  config(runId: number): Record<string, string> {
    const rows = this.db
      .prepare(`SELECT config FROM events WHERE run_id = ? AND kind = 'meta' AND config IS NOT NULL ORDER BY id`)
      .pluck()
      .all(runId) as string[];
    return Object.assign({}, ...rows.map((c) => JSON.parse(c) as Record<string, string>)) as Record<string, string>;
  }

  /** The run's last `finished` event (the trainer's end-of-training summary), if any. */
  finished(runId: number): EventRow | undefined {
    return this.heldOr(runId, 'finished', () => {
      const r = prepared(
        this.db,
        `SELECT * FROM events WHERE run_id = ? AND kind = 'finished' ORDER BY id DESC LIMIT 1`,
      ).get(runId) as Raw | undefined;
      return r && fromRow(r);
    });
  }
}
