/** A tailer in its own process for tailerModel.test.ts: reads `path` into `db` every few ms until killed. */
import { setTimeout as sleep } from 'node:timers/promises';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { Store } from '../../src/store/sqlite/store.ts';

const [path, root, db, chunk] = process.argv.slice(2) as [string, string, string, string];
const store = Store.open(db);
const ingestor = new Ingestor(store, { maxLineBytes: 64 * 1024, examplesPerStep: 2, chunkBytes: Number(chunk) });
process.stdout.write('ready\n');
for (;;) {
  await ingestor.ingest(path, root);
  await sleep(2);
}
