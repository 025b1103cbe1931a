import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type App, type ChatSettings } from '../../src/app.ts';
import type { Config } from '../../src/config/schema.ts';
import { silentLog } from '../../src/log.ts';
import { learningLine, tempDir } from '../helpers.ts';

/** A run named `grpo` being written to while `start` (with chat bots, no terminal) watches it. */
export class WatchedRun {
  readonly root = tempDir();
  private readonly log = join(this.root, 'runs', 'grpo', 'learning.log');
  /** the last step written */
  step = 0;

  constructor() {
    mkdirSync(join(this.root, 'runs', 'grpo'), { recursive: true });
    writeFileSync(this.log, '');
  }

  /** Appends `n` seed-000 lines (grad and frac_zero_std as given). */
  write(n: number, extra: { grad?: number; frac?: number } = {}): void {
    for (let i = 0; i < n; i++) appendFileSync(this.log, `${learningLine(++this.step, extra)}\n`);
  }

  /** Starts the app on the run, with short delivery backoff so that outages pass quickly. */
  start(config: Config, chat: ChatSettings): Promise<App> {
    return startApp({
      config,
      dbPath: join(this.root, 'rlwatch.db'),
      roots: [join(this.root, 'runs')],
      log: silentLog,
      terminal: null,
      chat,
      delivery: { baseBackoffMs: 200, maxBackoffMs: 400 },
    });
  }
}
