/**
 * The thread that checkpoints the WAL of `start`'s database (walCheckpoints.ts): a connection of its own, a PASSIVE
 * checkpoint every `everyMs` (it never waits for the writer, nor the writer for it), until the first message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { SQLITE_ADDON } from './sqliteAddon.ts';

const { path, everyMs } = workerData as { path: string; everyMs: number };
const db = new Database(path, { fileMustExist: true, timeout: 0, nativeBinding: SQLITE_ADDON });
db.pragma('synchronous = NORMAL'); // as the writer's: the WAL synced before a checkpoint, the database after it
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // the database busy or locked (a `rlwatch` command migrating it, say): the next tick checkpoints
  }
}, everyMs);
parentPort!.once('message', () => {
  clearInterval(timer);
  db.close();
  parentPort!.close();
});
