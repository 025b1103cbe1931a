/** Mutes on SQLite: matchers, a time span, an author and a reason, and whether one matches an alert. */
import type { Database } from 'better-sqlite3';
import { globMatch } from '../lib/duration.ts';
import { prepared } from './sqlite/prepared.ts';

export interface SilenceRow {
  id: number;
  run: string | null;
  rule: string | null;
  severity: string | null;
  starts_at: number;
  ends_at: number;
  /** who muted, as their platform knows them: kept for audit */
  author: string;
  /** who muted, as readers know them (untrusted text): what `/mutes` shows */
  author_name: string;
  reason: string;
  ended_at: number | null;
}

/** A mute to record; `author_name` left out: the author's id is their name (a mute written by code). */
export type NewSilence = Omit<SilenceRow, 'id' | 'ended_at' | 'author_name'> & { author_name?: string };

/** Mutes: matchers (run glob, rule, severity; NULL matches anything), a time span, an author, a reason. */
export class Silences {
  constructor(private readonly db: Database) {}

  /** `author_name` left out: the author's id is their name (a mute written by code rather than a person). */
  add(s: NewSilence): SilenceRow {
    const info = prepared(
      this.db,
      `INSERT INTO silences (run, rule, severity, starts_at, ends_at, author, author_name, reason)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(s.run, s.rule, s.severity, s.starts_at, s.ends_at, s.author, s.author_name ?? s.author, s.reason);
    return this.byId(Number(info.lastInsertRowid)) as SilenceRow;
  }

  byId(id: number): SilenceRow | undefined {
    return prepared(this.db, 'SELECT * FROM silences WHERE id = ?').get(id) as SilenceRow | undefined;
  }

  end(id: number, at: number): void {
    prepared(this.db, 'UPDATE silences SET ended_at = ? WHERE id = ?').run(at, id);
  }

  /** Mutes whose time ran out but that are not marked ended yet. */
  expired(now: number): SilenceRow[] {
    return prepared(this.db, 'SELECT * FROM silences WHERE ended_at IS NULL AND ends_at <= ? ORDER BY id').all(
      now,
    ) as SilenceRow[];
  }

  /** A mute holds from its creation until its end whatever the clock reads between: `starts_at` is when it was made
   * (mutes have no future start), so a clock stepped back behind it must not lift it. */
  active(now: number): SilenceRow[] {
    return prepared(this.db, 'SELECT * FROM silences WHERE ended_at IS NULL AND ends_at > ? ORDER BY id').all(
      now,
    ) as SilenceRow[];
  }
}

export function silenceMatches(s: SilenceRow, alert: { run: string; rule: string; severity: string }): boolean {
  return (
    (s.run === null || globMatch(s.run, alert.run)) &&
    (s.rule === null || s.rule === alert.rule) &&
    (s.severity === null || s.severity === alert.severity)
  );
}
