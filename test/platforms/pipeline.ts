/**
 * One platform instance behind the real pipeline, wired as src/app/start.ts wires it: a learning.log and a
 * completions file on disk → Ingestor → SQLite store → Engine → outbox → Dispatcher (routing with the platform's
 * `route`, to the instance's targets). Alerts are what the real rules make of the lines written.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigSchema } from '../../src/config/schema.ts';
import { parseDuration } from '../../src/lib/duration.ts';
import { Engine } from '../../src/engine/engine.ts';
import { ruleBookFor } from '../../src/engine/presets/index.ts';
import { Ingestor } from '../../src/ingest/ingestor.ts';
import { silentLog } from '../../src/lib/log.ts';
import { Dispatcher } from '../../src/notify/dispatcher.ts';
import { ReportSchedule } from '../../src/report/schedule.ts';
import type { Platform, PlatformInstance } from '../../src/platforms/platform.ts';
import { ROUTED } from '../../src/store/outbox.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { freshStore } from '../fixtures/pipeline.ts';
import { learningLine, tempDir } from '../helpers.ts';

export type OutboxRow = {
  id: number;
  target: string;
  attempts: number;
  done_at: number | null;
  dead_at: number | null;
  dead_reason: string | null;
};

export class PlatformRun {
  readonly runs: string;
  private readonly log: string;
  private readonly completions: string;
  readonly config = ConfigSchema.parse({});
  readonly engine: Engine;
  readonly dispatcher: Dispatcher;
  private readonly ingestor: Ingestor;
  step = 0;

  private constructor(
    readonly root: string,
    readonly store: Store,
    readonly instance: PlatformInstance,
    route: (run: string, severity: string) => string[],
  ) {
    this.runs = join(root, 'runs');
    this.log = join(this.runs, 'grpo', 'learning.log');
    this.completions = join(this.runs, 'grpo', 'reward_logs', 'completions.jsonl');
    mkdirSync(join(this.runs, 'grpo', 'reward_logs'), { recursive: true });
    writeFileSync(this.log, '');
    writeFileSync(this.completions, '');
    this.engine = new Engine(this.store, ruleBookFor(this.config), {
      repeatIntervalMs: parseDuration(this.config.alerts.repeatInterval) as number,
    });
    this.dispatcher = new Dispatcher(new SqliteAsyncStore(this.store), instance.targets, {
      baseBackoffMs: 50,
      maxBackoffMs: 100,
      route,
    });
    this.ingestor = new Ingestor(this.store, this.config.ingest, (e) => {
      if (e.kind === 'batch') this.engine.evaluate(e.result.runId);
    });
  }

  /** The platform's instance from its section (as rlwatch.yaml would give it) and environment. */
  static async of<S, T>(platform: Platform<S, T>, section: unknown, env: NodeJS.ProcessEnv): Promise<PlatformRun> {
    const settings = platform.settings(platform.section.parse(section), env);
    if (settings === null) throw new Error(`${platform.id} is not configured`);
    const root = tempDir();
    const { store } = freshStore({ dir: root });
    // no dispatcher to wake here: `write` drains the outbox after every batch
    const ctx = { store: new SqliteAsyncStore(store), config: ConfigSchema.parse({}), log: silentLog, wake: () => {} };
    return new PlatformRun(root, store, await platform.create(settings, ctx), platform.route(settings, ctx.config));
  }

  /** Appends `n` learning.log lines; then ingests them and drains the outbox. */
  async write(n: number, extra: { grad?: number; frac?: number } = {}): Promise<void> {
    for (let i = 0; i < n; i++) appendFileSync(this.log, `${learningLine(++this.step, extra)}\n`);
    await this.ingestor.ingest(this.log, this.runs);
    await this.dispatcher.kick();
  }

  /** Generations of the current step (examples on the next alert's card). */
  async generations(items: Array<{ reward: number; completion: string }>): Promise<void> {
    const lines = items.map((g, i) => JSON.stringify({ problem_id: `p${i}`, step: this.step, ...g }));
    appendFileSync(this.completions, `${lines.join('\n')}\n`);
    await this.ingestor.ingest(this.completions, this.runs);
  }

  /** What the report schedule has due (the milestone report of a run past epoch 0.5), to this platform's targets;
   * then drains the outbox. */
  async reports(): Promise<number> {
    const targets = this.instance.targets.map((t) => t.name);
    const written = await new ReportSchedule(new SqliteAsyncStore(this.store), this.config, () => targets).tick();
    await this.dispatcher.kick();
    return written;
  }

  /** The rows of the instance's targets (the engine's platform-neutral rows, routed into these, left out). */
  rows(): OutboxRow[] {
    return this.store.db
      .prepare('SELECT id, target, attempts, done_at, dead_at, dead_reason FROM outbox WHERE target <> ? ORDER BY id')
      .all(ROUTED) as OutboxRow[];
  }

  async close(): Promise<void> {
    await this.dispatcher.stop(0);
    await this.instance.stop?.();
    this.store.close();
  }
}

/** Completions a hostile (or unlucky) model could write: pings, markup and links for every platform. */
export const HOSTILE = [
  '@everyone @here @channel @all <!channel> <!here> <@U0001> <at user_id="all">all</at> <at id=all></at>',
  '<script>alert(1)</script> <b>bold</b> <a href="https://evil.example">click</a> [click](https://evil.example)',
  '**bold** _it_ ``` fence ``` # heading & &amp; </pre></code>',
].join('\n');
