/**
 * `rlwatch demo`: replays the bundled sample GRPO run into a temporary directory while `start` watches it, so a new
 * user sees alerts fire and resolve without a training job of their own.
 */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { platformsFromEnv, startApp, type App } from './start.ts';
import type { Config } from '../config/schema.ts';
import type { Log } from '../lib/log.ts';
import { SAMPLES_DIR } from '../lib/paths.ts';
import { Store } from '../store/sqlite/store.ts';

export const SAMPLE_RUN = join(SAMPLES_DIR, 'grpo-demo');
export const DEMO_RUN = 'grpo-demo';

/** How long the demo waits, once replayed, for its notifications to reach chat. */
const DELIVERY_WAIT_MS = 30_000;

/** The sample's files, and how many of their lines belong to one training step. */
const FILES = [
  { path: 'reward_logs/completions.jsonl', perStep: 4 },
  { path: 'reward_logs/syntax_aware_breakdown.jsonl', perStep: 4 },
  { path: 'learning.log', perStep: 1 },
  { path: 'batch_metrics.jsonl', perStep: 1 },
];

const linesOf = (path: string): string[] => readFileSync(join(SAMPLE_RUN, path), 'utf8').split('\n').filter(Boolean);

/**
 * `rlwatch demo`: the sample run is written into a temporary directory step by step, as a trainer would
 * (generations first, then the step's metrics), while `start` watches it, so alerts fire and resolve in the
 * terminal as they would on a real run, and in the configured chat unless `chat` is false. Returns the directory.
 */
export async function replayDemo(opts: {
  config: Config;
  dbPath: string;
  paceMs: number;
  log: Log;
  chat: boolean;
  env?: NodeJS.ProcessEnv;
}): Promise<string> {
  const platforms = opts.chat ? platformsFromEnv(opts.config, opts.env) : {};
  const ids = Object.keys(platforms);
  if (ids.length > 0)
    opts.log.info(`the demo's alerts go to ${ids.join(', ')} too, as start's would (--no-chat keeps them here)`);
  const root = mkdtempSync(join(tmpdir(), 'rlwatch-demo-'));
  const runDir = join(root, DEMO_RUN);
  const sources = FILES.map((f) => ({ ...f, lines: linesOf(f.path), target: join(runDir, f.path) }));
  for (const s of sources) {
    mkdirSync(dirname(s.target), { recursive: true });
    writeFileSync(s.target, '');
  }
  forgetPreviousDemo(opts.dbPath);
  const app = await startApp({ config: opts.config, dbPath: opts.dbPath, roots: [root], log: opts.log, platforms });
  const steps = Math.min(...sources.map((s) => Math.floor(s.lines.length / s.perStep)));
  opts.log.info(`replaying ${steps} steps of ${DEMO_RUN} into ${runDir}, one every ${opts.paceMs} ms`);
  for (let step = 0; step < steps; step++) {
    for (const s of sources) {
      const chunk = s.lines.slice(step * s.perStep, (step + 1) * s.perStep);
      appendFileSync(s.target, `${chunk.join('\n')}\n`);
    }
    if ((step + 1) % 50 === 0) opts.log.info(`step ${step + 1}/${steps}`);
    await sleep(opts.paceMs);
  }
  // let the watcher see the last lines (its trailing re-check waits 60 ms) before stopping
  const last = () => app.store.runs.byName(DEMO_RUN)?.last_step ?? 0;
  for (let i = 0; i < 100 && last() < steps; i++) await sleep(50);
  await app.live.idle();
  if (ids.length > 0) await awaitDelivery(app, opts.log);
  await app.stop();
  return runDir;
}

/**
 * Waits for the outbox to empty, within DELIVERY_WAIT_MS or until a platform refuses rlwatch. What is still waiting
 * then is set aside: a later `start` on this database must not post a demo's alerts as news.
 */
async function awaitDelivery(app: App, log: Log): Promise<void> {
  const waiting = () => app.store.outbox.open().filter((r) => r.dead_at === null);
  const platform: { refused: Error | null } = { refused: null };
  void app.failure.then((err) => (platform.refused = err));
  const until = Date.now() + DELIVERY_WAIT_MS;
  if (waiting().length > 0)
    log.info(`waiting up to ${DELIVERY_WAIT_MS / 1000} s for the demo's notifications to reach chat`);
  while (waiting().length > 0 && platform.refused === null && Date.now() < until) {
    void app.dispatcher.kick();
    await sleep(100);
  }
  if (platform.refused) log.warn(platform.refused.message);
  const left = waiting();
  for (const row of left) app.store.outbox.setAside(row.id, 'the demo ended before it was delivered', Date.now());
  if (left.length > 0)
    log.warn(
      `${left.length} of the demo's notifications did not reach chat: set aside, so that no later start posts them (rlwatch outbox lists them)`,
    );
}

/** Each demo is a fresh replay: the previous demo run (in an older temporary directory) is removed. */
function forgetPreviousDemo(dbPath: string): void {
  const store = Store.openWriter(dbPath, 'demo');
  try {
    const previous = store.runs.byName(DEMO_RUN);
    if (previous) store.runs.remove(previous.id);
  } finally {
    store.close();
  }
}
