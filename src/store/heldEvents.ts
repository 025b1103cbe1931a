/**
 * What the rules read of a run's events (errors, warnings, the end of training, run facts), kept in memory until the
 * run's next batch that writes events: the crash, warning and finished rules read them after every batch, and almost
 * no batch writes any. Honest because one process writes a run's events: on SQLite the writer (its lock), on
 * PostgreSQL the watcher of the run's scope. Dropped when a transaction rolls back. Each answer is a copy: a caller
 * may change what it is given.
 */
export class HeldEvents {
  private readonly runs = new Map<number, Map<string, unknown>>();

  /** The answer to `key` for the run: held, or `read` and held. */
  get<T>(runId: number, key: string, read: () => T): T {
    let held = this.runs.get(runId);
    if (!held) this.runs.set(runId, (held = new Map()));
    if (!held.has(key)) held.set(key, read());
    const answer = held.get(key);
    // nearly always none (no error since the cursor, no end of training, no run facts), which needs no deep copy
    if (answer === undefined || answer === null) return answer as T;
    if (Array.isArray(answer)) return (answer.length === 0 ? [] : structuredClone(answer)) as T;
    const plain = Object.getPrototypeOf(answer) === Object.prototype;
    if (plain && Object.keys(answer as object).length === 0) return {} as T;
    return structuredClone(answer) as T;
  }

  /** A batch of the run wrote events. */
  wrote(runId: number): void {
    this.runs.delete(runId);
  }

  /** Drops what is held of the run, or of every run. */
  forget(runId?: number): void {
    if (runId === undefined) this.runs.clear();
    else this.runs.delete(runId);
  }
}
