/**
 * Feeds crafted metric traces to the alert engine without files: each record is committed to a real
 * SQLite store as the ingestor would, then the engine evaluates. The clock is injected (`trace.now`).
 */
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { Engine } from '../../src/engine/engine.ts';
import type { Notification } from '../../src/engine/notification.ts';
import { GRPO_PRESET } from '../../src/engine/presets/grpo.ts';
import { RuleBook } from '../../src/engine/rules.ts';
import { learningLog } from '../../src/ingest/formats/learningLog.ts';
import type { ExampleRecord } from '../../src/ingest/records.ts';
import type { AlertRow } from '../../src/store/alerts.ts';
import type { FileRow } from '../../src/store/files.ts';
import type { RunRow } from '../../src/store/runs.ts';
import { Store } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers.ts';

/** 2025-01-01 03:00:00 UTC: the 3 a.m. the product promises to watch. */
export const T0 = Date.UTC(2025, 0, 1, 3, 0, 0);
export const MIN = 60_000;
export const HOUR = 60 * MIN;

export type Values = Record<string, number>;

/** `n` copies of one record. */
export const times = (n: number, v: Values): Values[] => Array.from({ length: n }, () => ({ ...v }));

/** One metric over several records: `series('x', [1, 2])` = `[{ x: 1 }, { x: 2 }]`. */
export const series = (metric: string, values: readonly number[]): Values[] => values.map((v) => ({ [metric]: v }));

/** The values of one learning.log line (the OCaml GRPO trainer's), read by the real parser (`grad` -> grad_norm, ...). */
export function learningLogValues(line: string): Values {
  const parsed = learningLog.open({ relPath: 'learning.log' })(line);
  if (parsed.kind !== 'metric') throw new Error(`not a metric line: ${line}`);
  return Object.fromEntries(parsed.record.values);
}

/** A rule book of some preset rules only, unchanged. */
export function presetOnly(...ids: string[]): RuleBook {
  const rules = GRPO_PRESET.filter((r) => ids.includes(r.id));
  if (rules.length !== ids.length) throw new Error(`unknown preset rule among ${ids.join(', ')}`);
  return RuleBook.build(rules, []);
}

/** A rule book of config entries only (no preset). */
export const rulesOf = (...entries: unknown[]): RuleBook => RuleBook.build([], entries);

export interface TraceOptions {
  /** default: the whole GRPO preset */
  book?: RuleBook;
  /** default: `r1` */
  run?: string;
  /** default: 1 hour */
  repeatIntervalMs?: number;
  targets?: string[];
  /** default: T0 */
  now?: number;
  /** default: the clock when the engine is made */
  sessionStart?: number;
}

/** An outbox row with its payload parsed. */
export interface SentRow {
  id: number;
  target: string;
  created_at: number;
  done_at: number | null;
  attempts: number;
  last_error: string | null;
  next_attempt_at: number | null;
  notification: Notification;
}

const open: Store[] = [];
afterEach(() => {
  for (const s of open.splice(0)) if (s.db.open) s.close();
});

export class Trace {
  now: number;
  readonly clock = (): number => this.now;
  readonly dbPath: string;
  readonly book: RuleBook;
  store!: Store;
  engine!: Engine;
  run!: RunRow;
  file!: FileRow;
  private lastStep = 0;
  private seq = 0;
  /** every notification the engine wrote, in order: what each evaluation said, before rows that wait merge */
  private readonly written: Array<{ target: string; n: Notification }> = [];

  constructor(private readonly opts: TraceOptions = {}) {
    this.now = opts.now ?? T0;
    this.book = opts.book ?? RuleBook.build(GRPO_PRESET, []);
    this.dbPath = join(tempDir('rlw-engine-'), 'a.db');
    this.connect(opts.sessionStart);
  }

  /** Opens the store with a new Engine (a process starting): `catchUp` reads what is there before the engine
   * is told it has caught up, as `start` does; what follows is live. */
  private connect(sessionStart?: number, catchUp?: () => void): void {
    this.store = Store.open(this.dbPath, { now: this.clock });
    open.push(this.store);
    const name = this.opts.run ?? 'r1';
    this.run = this.store.runs.ensure(name, `/x/${name}`);
    const path = `/x/${name}/learning.log`;
    this.file = this.store.files.byPath(path) ?? this.store.files.add(this.run.id, path, 'learningLog');
    this.lastStep = this.run.last_step ?? 0;
    const outbox = this.store.outbox;
    const add = outbox.add.bind(outbox);
    outbox.add = (runId, target, payload, at) => {
      this.written.push({ target, n: payload as Notification });
      add(runId, target, payload, at);
    };
    this.engine = new Engine(this.store, this.book, {
      repeatIntervalMs: this.opts.repeatIntervalMs ?? HOUR,
      targets: this.opts.targets ?? ['console'],
      now: this.clock,
      sessionStart: sessionStart ?? this.now,
    });
    catchUp?.();
    this.engine.caughtUp();
  }

  /** Closes the store (as a stopped process would) and opens it again with a new Engine; `catchUp` is what the
   * new process reads of what was there at start-up (history, not live). */
  restart(catchUp?: () => void): void {
    this.store.close();
    this.connect(undefined, catchUp);
  }

  advance(ms: number): this {
    this.now += ms;
    return this;
  }

  /**
   * Commits records as one batch at the next steps (1, 2, 3, ... over the trace); returns their steps.
   * The file's mtime is the clock unless given.
   */
  commit(
    rows: readonly Values[],
    opts: { mtimeMs?: number; examples?: Array<ExampleRecord & { step: number }> } = {},
  ): number[] {
    const steps = rows.map((_, i) => this.lastStep + 1 + i);
    this.lastStep += rows.length;
    this.store.commit(
      {
        runId: this.run.id,
        fileId: this.file.id,
        metrics: rows.map((v, i) => ({ step: steps[i] as number, values: new Map(Object.entries(v)) })),
        examples: opts.examples ?? [],
        skips: new Map(),
        progress: {
          dev: 1,
          ino: 1,
          offset: this.lastStep * 100,
          size: this.lastStep * 100,
          mtimeMs: opts.mtimeMs ?? this.now,
          seq: this.seq++,
          lines: rows.length,
          records: rows.length,
        },
      },
      2,
    );
    return steps;
  }

  /** The next commit logs `step` again (a restarted job); from there the steps go on 1 by 1. */
  resumeAt(step: number): this {
    this.lastStep = step - 1;
    return this;
  }

  /** Commits `n` lines that hold no record (a config dump, a progress bar) and, when asked, evaluates. */
  lines(n: number): this {
    this.store.commit(
      {
        runId: this.run.id,
        fileId: this.file.id,
        metrics: [],
        examples: [],
        skips: new Map(),
        progress: { dev: 1, ino: 1, offset: 0, size: 0, mtimeMs: this.now, seq: this.seq, lines: n, records: 0 },
      },
      2,
    );
    return this;
  }

  /** Commits and evaluates each record on its own (a live run). */
  feed(rows: readonly Values[], announce = true): this {
    for (const row of rows) {
      this.commit([row]);
      this.engine.evaluate(this.run.id, announce);
    }
    return this;
  }

  /** Commits all records as one batch, then evaluates once. */
  batch(rows: readonly Values[], announce = true): this {
    this.commit(rows);
    this.engine.evaluate(this.run.id, announce);
    return this;
  }

  tick(): number {
    return this.engine.tick();
  }

  /** Every alert of the run, oldest first. */
  alerts(): AlertRow[] {
    return this.store.alerts.list({ runId: this.run.id, all: true }).reverse();
  }

  /** The one alert of a rule (fails the test when there is not exactly one). */
  alert(rule: string): AlertRow {
    const found = this.alerts().filter((a) => a.rule === rule);
    if (found.length !== 1) throw new Error(`expected one ${rule} alert, found ${found.length}`);
    return found[0] as AlertRow;
  }

  /** `rule state` of every alert, oldest first: a compact picture of the run's incidents. */
  states(): string[] {
    return this.alerts().map((a) => `${a.rule} ${a.state}`);
  }

  /** Every outbox row of a target, delivered or not, in order. */
  outbox(target = 'console'): SentRow[] {
    const rows = this.store.db
      .prepare(
        'SELECT id, target, created_at, done_at, attempts, last_error, next_attempt_at, payload FROM outbox WHERE target = ? ORDER BY id',
      )
      .all(target) as Array<Omit<SentRow, 'notification'> & { payload: string }>;
    return rows.map(({ payload, ...r }) => ({ ...r, notification: JSON.parse(payload) as Notification }));
  }

  /** The outbox as `kind rule@step` per item, one list per row: what the user was told, in order (a row that
   * waited took in what its run said next: `Outbox.add`). */
  said(target = 'console'): string[][] {
    return this.outbox(target).map((r) => said(r.notification));
  }

  /** What the engine wrote for a target as `kind rule@step` per item, one list per notification: what each
   * evaluation said, whether or not it joined a row that waited. */
  wrote(target = 'console'): string[][] {
    return this.written.filter((w) => w.target === target).map((w) => said(w.n));
  }
}

const said = (n: Notification): string[] => n.items.map((i) => `${i.kind} ${i.rule}@${i.step}`);
