import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp, type App, type PlatformSettings } from '../../src/app/start.ts';
import { ConfigSchema, type Config } from '../../src/config/schema.ts';
import { silentLog, type Log } from '../../src/lib/log.ts';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discordServer.ts';
import { startFakeSlack, type FakeSlack } from '../fakes/slackServer.ts';
import { learningLine, tempDir } from '../helpers.ts';

/** Both bots pointed at the local fakes, without retries: what the cross-platform tests start the app with. */
export function bothChats(discord: FakeDiscord, slack: FakeSlack): PlatformSettings {
  return {
    discord: {
      token: discord.token,
      apiUrl: discord.apiUrl,
      guildId: discord.guildId,
      channel: discord.channelId,
      retries: 0,
    },
    slack: {
      botToken: slack.botToken,
      appToken: slack.appToken,
      apiUrl: slack.apiUrl,
      channel: slack.channelId,
      retries: 0,
    },
  };
}

/** The fakes and `start` (default config) watching a run with both bots. */
export interface BothChats {
  discord: FakeDiscord;
  slack: FakeSlack;
  app: App;
}

/** Starts a fake Discord and a fake Slack, then `start` on `run` with both bots, once they are connected. */
export async function startBothChats(run: WatchedRun): Promise<BothChats> {
  const discord = await startFakeDiscord();
  const slack = await startFakeSlack();
  const app = await run.start(ConfigSchema.parse({}), bothChats(discord, slack));
  return { discord, slack, app };
}

/** Stops what `startBothChats` started (what of it did start). */
export async function stopBothChats(c: Partial<BothChats>): Promise<void> {
  await c.app?.stop();
  await c.discord?.close();
  await c.slack?.close();
}

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

  /** Appends `n` learning.log lines (grad and frac_zero_std as given). */
  write(n: number, extra: { grad?: number; frac?: number } = {}): void {
    for (let i = 0; i < n; i++) appendFileSync(this.log, `${learningLine(++this.step, extra)}\n`);
  }

  /** Starts the app on the run, with short delivery backoff so that outages pass quickly; resolves once the
   * bots are connected (they connect in the background). */
  async start(config: Config, chat: PlatformSettings, log: Log = silentLog): Promise<App> {
    const app = await this.startNow(config, chat, log);
    for (let i = 0; i < 500 && ![...app.platforms.values()].every((p) => p.ready?.() ?? true); i++) await sleep(20);
    return app;
  }

  /** Starts the app without waiting for the bots. */
  startNow(config: Config, chat: PlatformSettings, log: Log = silentLog): Promise<App> {
    return startApp({
      config,
      dbPath: join(this.root, 'rlwatch.db'),
      roots: [join(this.root, 'runs')],
      log,
      terminal: null,
      platforms: chat,
      delivery: { baseBackoffMs: 200, maxBackoffMs: 400 },
    });
  }
}
