import type { StoredExample } from '../examples.ts';

/** Rows as stored (JSON as text), turned into the shapes the SQLite store's modules return. */
export interface ExampleDbRow extends Omit<StoredExample, 'breakdown'> {
  breakdown: string;
}

export const exampleFromRow = (r: ExampleDbRow): StoredExample => ({
  ...r,
  breakdown: JSON.parse(r.breakdown) as Record<string, number>,
});
