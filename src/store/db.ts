import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate } from './migrate.ts';

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../migrations');

/** Opens (creating if needed) the SQLite file in WAL mode and brings its schema up to date. */
export function openDb(path: string): Database.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  // NORMAL in WAL mode survives a killed process (not a power cut) and keeps commits cheap.
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  // Readers (the CLI) and the writer (`start`) may share the file.
  db.pragma('busy_timeout = 5000');
  migrate(db, MIGRATIONS_DIR);
  return db;
}
