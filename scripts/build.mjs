// `npm run build` (and `prepare`, so `npm ci` leaves it built): bundles the CLI into dist/ so that bin/rlwatch
// starts without compiling TypeScript. Dependencies are bundled too (fewer files to resolve and read at start-up),
// except native addons and the chat platforms' SDKs, which stay lazy: src/app/start.ts imports the bots on demand, and
// code splitting keeps each such import its own chunk, loaded only when that platform is configured.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');

const outdir = join(root, 'dist');
rmSync(outdir, { recursive: true, force: true });
await build({
  // the backfill's parser runs in a worker thread of its own entry (src/ingest/threads/parseThread.ts finds it beside
  // it), and so does a PostgreSQL watcher's connection (src/store/postgres/pgLiveStore.ts), and `start`'s WAL checkpoints
  // (src/store/sqlite/walCheckpoints.ts), and the bot's charts (src/render/chartThread.ts)
  entryPoints: {
    cli: join(root, 'src', 'cli', 'main.ts'),
    parseWorker: join(root, 'src', 'ingest', 'threads', 'parseWorker.ts'),
    liveWorker: join(root, 'src', 'store', 'postgres', 'liveWorker.ts'),
    checkpointWorker: join(root, 'src', 'store', 'sqlite', 'checkpointWorker.ts'),
    chartWorker: join(root, 'src', 'render', 'chartWorker.ts'),
  },
  outdir,
  bundle: true,
  splitting: true,
  // smaller to parse at start-up; RLWATCH_BUILD_MINIFY=0 keeps the names (for reading a CPU profile)
  minify: process.env.RLWATCH_BUILD_MINIFY !== '0',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  // better-sqlite3's JavaScript is bundled (its addon is loaded by path: src/store/sqlite/sqliteAddon.ts); subset-font finds
  // its WebAssembly beside it, and only the chart thread loads it, once per machine (src/render/fonts.ts)
  external: ['@resvg/resvg-js', 'discord.js', '@slack/bolt', 'subset-font'],
  // bundled CommonJS packages call require(): give the ESM bundle one
  banner: {
    js: "import { createRequire as __rlwatchRequire } from 'node:module'; const require = __rlwatchRequire(import.meta.url);",
  },
});
