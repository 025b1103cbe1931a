/**
 * What the rules read of a run's events (errors, warnings, the end of training, run facts), kept on the watcher's
 * thread until the run's next batch that writes events: the crash, warning and finished rules read them after every
 * batch, and almost no batch writes any. Honest because the watcher of a run's scope is the only writer of its
 * events; dropped when a transaction rolls back. Each answer is a copy: a caller may change what it is given.
 */
export class HeldEvents {
  private readonly runs = new Map<number, Map<string, unknown>>();

  /** The answer to `key` for the run: held, or `read` and held. */
  get<T>(runId: number, key: string, read: () => T): T {
    let held = this.runs.get(runId);
    if (!held) this.runs.set(runId, (held = new Map()));
    if (!held.has(key)) held.set(key, read());
    return structuredClone(held.get(key)) as T;
  }

  /** A batch of the run wrote events. */
  wrote(runId: number): void {
    this.runs.delete(runId);
  }

  forget(): void {
    this.runs.clear();
  }
}
