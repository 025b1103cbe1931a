/** PostgreSQL rows turned into the shapes the SQLite store returns, and the column lists its statements name. */
import type { AlertRow } from '../alerts.ts';
import type { AttemptRow } from '../attempts.ts';
import type { ChatMessageRow } from '../chatMessages.ts';
import type { Raw as EventDbRow } from '../events.ts';
import type { StoredExample } from '../examples.ts';
import type { FileRow } from '../files.ts';
import type { RunRow } from '../runs.ts';
import type { SilenceRow } from '../silences.ts';
import type { UnreadRow } from '../unread.ts';

/** Rows as stored (JSON as text), turned into the shapes the SQLite store's modules return. */
export interface ExampleDbRow extends Omit<StoredExample, 'breakdown'> {
  breakdown: string;
}

export const exampleFromRow = (r: ExampleDbRow): StoredExample => ({
  ...r,
  breakdown: JSON.parse(r.breakdown) as Record<string, number>,
});

/**
 * A table's columns, named in the statements that read its rows whole instead of `*`: a watcher's statements are
 * prepared once per connection, and one whose result gains a column (a newer rlwatch's migration adding it while
 * this one runs) fails with 0A000, "cached plan must not change result type". The record lists every key of the
 * row's type, so a column added to the type and not here fails to compile.
 */
function columns<T>(keys: Record<keyof T, true>): (alias?: string) => string {
  const names = Object.keys(keys).map((k) => (k === 'offset' ? '"offset"' : k));
  const plain = names.join(', ');
  return (alias) => (alias === undefined ? plain : names.map((n) => `${alias}.${n}`).join(', '));
}

/** `runs`' columns (a RunRow and the watcher's scope). */
export const runColumns = columns<RunRow & { scope: string }>({
  id: true,
  name: true,
  path: true,
  created_at: true,
  updated_at: true,
  first_step: true,
  last_step: true,
  records: true,
  active_at: true,
  started_at: true,
  live_at: true,
  batches: true,
  evaluated: true,
  scope: true,
});

/** `files`' columns (a FileRow, its run's scope and when the row last changed). */
export const fileColumns = columns<FileRow & { scope: string; updated_at: number | null }>({
  id: true,
  run_id: true,
  path: true,
  format: true,
  dev: true,
  ino: true,
  offset: true,
  size: true,
  mtime_ms: true,
  seq: true,
  lines: true,
  records: true,
  skipped: true,
  grew_at: true,
  last_step: true,
  attempt: true,
  scope: true,
  updated_at: true,
});

/** `attempts`' columns. */
export const attemptColumns = columns<AttemptRow>({
  run_id: true,
  attempt: true,
  resumed_step: true,
  at: true,
  last_step: true,
  rewound: true,
});

/** `alerts`' columns. */
export const alertColumns = columns<AlertRow>({
  id: true,
  run_id: true,
  rule: true,
  metric: true,
  severity: true,
  state: true,
  summary: true,
  details: true,
  started_step: true,
  started_at: true,
  fired_step: true,
  fired_at: true,
  resolved_step: true,
  resolved_at: true,
  acked_by: true,
  acked_by_name: true,
  acked_at: true,
  ack_comment: true,
  notified_state: true,
  notified_at: true,
});

/** `events`' columns (an event as stored, before `fromRow`, and the file it was read from). */
export const eventColumns = columns<EventDbRow & { file_id: number | null }>({
  id: true,
  run_id: true,
  file_id: true,
  step: true,
  kind: true,
  title: true,
  text: true,
  fatal: true,
  context: true,
  vals: true,
  config: true,
  at: true,
});

/** `silences`' columns. */
export const silenceColumns = columns<SilenceRow>({
  id: true,
  run: true,
  rule: true,
  severity: true,
  starts_at: true,
  ends_at: true,
  author: true,
  author_name: true,
  reason: true,
  ended_at: true,
});

/** `chat_messages`' columns. */
export const chatMessageColumns = columns<ChatMessageRow>({
  id: true,
  target: true,
  ref: true,
  run_id: true,
  alert_ids: true,
  payload: true,
  delivery: true,
  posted_at: true,
});

/** `unread_files`' columns (an UnreadRow and the scope of the watcher that noted it). */
export const unreadColumns = columns<UnreadRow & { scope: string }>({
  path: true,
  run: true,
  run_dir: true,
  rel_path: true,
  reason: true,
  size: true,
  seen_at: true,
  scope: true,
});

/**
 * The alerts `Alerts.announceable` returns, as a condition on `alerts`' columns: the firing ones, the resolved ones
 * whose firing was announced, and those resolved before they could be announced that fired as `firedAt` says (a
 * condition on `fired_at`). PgStore's `announceable` and the watcher's read after a batch both use it.
 */
export const announceableAlerts = (firedAt: string): string =>
  `(state = 'firing' OR (state = 'resolved' AND (notified_state = 'firing'
     OR (notified_state IS NULL AND ${firedAt}))))`;
