/** WAL checkpoints of a long-lived writer on a thread of their own, so that commits do not stall on them. */
import type Database from 'better-sqlite3';
import { spawnWorker } from '../../lib/workerThread.ts';

/** How often the WAL is checkpointed off the writer's thread: ~3,000 frames at 100 runs x 5 lines/s. */
export const CHECKPOINT_MS = 1000;
/** SQLite's own: a checkpoint by the committing connection once the WAL holds this many frames. */
const AUTOCHECKPOINT_FRAMES = 1000;

/**
 * Checkpoints of a long-lived writer's WAL (`start`) on a thread of their own. SQLite checkpoints in the COMMIT that
 * takes the WAL past 1,000 frames, on the thread that commits, and a checkpoint syncs the WAL and the database to
 * disk: live, that was 3 stalls a second at 100 runs x 5 lines/s, and the lines appended meanwhile waited (p99
 * line -> commit 43-227 ms with them, 32-33 ms without, in alternated runs of `BENCH_ONLY=live-scale`). The writer
 * commits without checkpointing; if the thread ends unasked (it could not open the file, say), SQLite's own
 * checkpoints are turned on again. `stop` ends the thread and resolves once it has exited.
 */
export function walCheckpoints(db: Database.Database, everyMs = CHECKPOINT_MS): { stop(): Promise<void> } {
  const worker = spawnWorker(import.meta.url, 'checkpointWorker', { workerData: { path: db.name, everyMs } });
  worker.unref(); // never what keeps a process alive
  let stopping = false;
  const exited = new Promise<void>((done) => {
    worker.once('exit', () => {
      if (!stopping && db.open) db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_FRAMES}`);
      done();
    });
  });
  worker.on('error', () => {}); // its exit says it
  db.pragma('wal_autocheckpoint = 0');
  return {
    async stop() {
      stopping = true;
      worker.ref(); // awaited: the process must not run out of things to wait for before the thread has exited
      worker.postMessage('stop');
      await exited;
    },
  };
}
