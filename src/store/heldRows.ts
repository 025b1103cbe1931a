/**
 * Table rows a store writes, held from its first write of each and changed in memory as each later write changes
 * them, so that reading one asks SQLite nothing: the ingestor and the engine read a live line's file and run rows
 * several times. Honest because the store that writes these rows is their one writer (the writer lock); a store that
 * only reads holds nothing. A copy is handed out: a caller may change what it is given. Dropped on a rollback.
 */
export class HeldRows<Row extends object> {
  private readonly rows = new Map<number, Row>();

  constructor(
    /** the row as the database has it now */
    private readonly read: (id: number) => Row | undefined,
    /** told of each row as it is first held */
    private readonly onHold: (id: number, row: Row) => void = () => {},
  ) {}

  /** The row: a copy of the held one, else as the database has it. */
  row(id: number): Row | undefined {
    const held = this.rows.get(id);
    return held ? { ...held } : this.read(id);
  }

  /** Call after each write of row `id`: the held row, to change as the write did; undefined the first time, when
   * the row is read (it shows the write already) and held from then on. */
  written(id: number): Row | undefined {
    const held = this.rows.get(id);
    if (held) return held;
    const row = this.read(id);
    if (row) {
      this.rows.set(id, row);
      this.onHold(id, row);
    }
    return undefined;
  }

  /** The held row, to change as a write did, if it is held; a write alone does not start holding it. */
  ifHeld(id: number): Row | undefined {
    return this.rows.get(id);
  }

  forget(): void {
    this.rows.clear();
  }
}
