import { consoleTarget } from './chat/console.ts';
import type { DiscordBot, DiscordOptions } from './chat/discord.ts';
import type { SlackBot, SlackOptions } from './chat/slack.ts';
import type { Config } from './config/schema.ts';
import { globMatch, parseDuration } from './engine/duration.ts';
import { unreadSummary } from './commands/files.ts';
import { Engine } from './engine/engine.ts';
import { ReportSchedule } from './report/schedule.ts';
import { ruleBookFor } from './engine/presets/index.ts';
import { Ingestor, type IngestEvent } from './ingest/ingestor.ts';
import { LiveIngest } from './ingest/watcher.ts';
import type { Log } from './log.ts';
import { Dispatcher, type DispatcherOptions, type Target } from './notify/dispatcher.ts';
import { channelsFor, targetName } from './notify/routing.ts';
import type { BatchResult } from './store/store.ts';
import { retryWhileBusy, Store } from './store/store.ts';

/** How often stalls, repeats and expired mutes are looked at. */
const TICK_MS = 10_000;

/** What the chat bots need besides the store, config and log: tokens and endpoints, from the environment. */
export interface ChatSettings {
  discord?: Omit<DiscordOptions, 'store' | 'config' | 'log'>;
  slack?: Omit<SlackOptions, 'store' | 'config' | 'log'>;
}

/** Chat settings from DISCORD_* and SLACK_* variables; a platform without its token stays off. */
export function chatFromEnv(config: Config, env: NodeJS.ProcessEnv = process.env): ChatSettings {
  const chat: ChatSettings = {};
  if (env.DISCORD_TOKEN) {
    chat.discord = {
      token: env.DISCORD_TOKEN,
      apiUrl: env.DISCORD_API_URL || undefined,
      guildId: env.DISCORD_GUILD_ID || undefined,
      channel: config.discord.channel ?? (env.DISCORD_CHANNEL_ID || undefined),
    };
  }
  if (env.SLACK_BOT_TOKEN) {
    chat.slack = {
      botToken: env.SLACK_BOT_TOKEN,
      appToken: env.SLACK_APP_TOKEN || undefined,
      signingSecret: env.SLACK_SIGNING_SECRET || undefined,
      apiUrl: env.SLACK_API_URL || undefined,
      channel: config.slack.channel ?? (env.SLACK_CHANNEL_ID || undefined),
    };
  }
  return chat;
}

export interface App {
  store: Store;
  live: LiveIngest;
  engine: Engine;
  dispatcher: Dispatcher;
  discord: DiscordBot | null;
  slack: SlackBot | null;
  /** settles when a chat platform refused rlwatch for good (a bad token): `start` reports it and exits */
  failure: Promise<Error>;
  /** Stops within about a second and a half, whatever the platforms do; undelivered rows stay pending. */
  stop(): Promise<void>;
}

/** How long `stop` waits for deliveries in flight, and then the bots (half each), before it lets go. */
const STOP_GRACE_MS = 1000;

/** `p`, or nothing once `ms` have passed: a platform that does not answer does not hold the shutdown. */
async function within(p: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p?.catch(() => {}), new Promise((done) => (timer = setTimeout(done, ms)))]);
  clearTimeout(timer);
}

/** Operational events of ingest, as log lines; batches go to `onBatch`. */
export function ingestEvents(log: Log, onBatch: (r: BatchResult) => void = () => {}): (e: IngestEvent) => void {
  return (e) => {
    if (e.kind === 'batch') onBatch(e.result);
    else if (e.kind === 'restart') log.warn(`${e.path} was ${e.why}: reading it again from the start`);
    else log.warn(`cannot read ${e.path}: ${e.error}`);
  };
}

/** The engine, routing every alert to the terminal (if any) and to the chat channels its run and
 * severity are routed to. */
export function makeEngine(
  store: Store,
  config: Config,
  opts: { terminal: boolean; discord?: string; slack?: string; now?: () => number },
): Engine {
  return new Engine(store, ruleBookFor(config), {
    repeatIntervalMs: parseDuration(config.alerts.repeatInterval) as number,
    targets: [],
    route: alertRoute(config, opts),
    now: opts.now,
  });
}

/** The outbox targets of an alert of a run and severity (scheduled reports go where warnings go). */
export function alertRoute(
  config: Config,
  opts: { terminal: boolean; discord?: string; slack?: string },
): (run: string, severity: string) => string[] {
  // info (trends up, too-easy groups) goes to the terminal only, unless a route names `info` itself (issue 11)
  const chat = (platform: 'discord' | 'slack', run: string, severity: string): boolean =>
    severity !== 'info' ||
    config[platform].routes.some((r) => r.severity?.includes('info') === true && globMatch(r.runs, run));
  const route = (run: string, severity: string): string[] => [
    ...(opts.terminal ? ['console'] : []),
    ...(opts.discord !== undefined && chat('discord', run, severity) ? channelsFor(config, 'discord', opts.discord, run, severity).map((c) => targetName('discord', c)) : []),
    ...(opts.slack !== undefined && chat('slack', run, severity) ? channelsFor(config, 'slack', opts.slack, run, severity).map((c) => targetName('slack', c)) : []),
  ];
  return route;
}

/** The terminal notifier on stdout, in colour on a TTY. */
export const terminal = (): Target => consoleTarget((s) => process.stdout.write(s), process.stdout.isTTY === true);

/**
 * ingest → store → engine → outbox → notify, for one pass over what is there (`backfill`): rules are
 * evaluated over the whole history, and only what is still firing at the end is announced.
 */
export function backfillPipeline(store: Store, config: Config, log: Log, target: Target) {
  const engine = makeEngine(store, config, { terminal: true });
  const dispatcher = new Dispatcher(store, [target], { log });
  const ingestor = new Ingestor(store, config.ingest, ingestEvents(log, (r) => engine.evaluate(r.runId, false)));
  return {
    ingestor,
    async finish(): Promise<void> {
      engine.evaluateBehind();
      engine.tick();
      await dispatcher.kick();
      await dispatcher.stop();
    },
  };
}

/** `rlwatch start`: the same pipeline, live, with the chat bots when configured. Resolves once the files
 * already present have been read. */
export async function startApp(opts: {
  config: Config;
  dbPath: string;
  roots: readonly string[];
  log: Log;
  chat?: ChatSettings;
  /** the terminal notifier; null for none */
  terminal?: Target | null;
  /** delivery backoff (tests shorten it) */
  delivery?: Pick<DispatcherOptions, 'baseBackoffMs' | 'maxBackoffMs'>;
  onBatch?: (r: BatchResult) => void;
}): Promise<App> {
  const store = Store.openWriter(opts.dbPath, 'start');
  const { config, log } = opts;
  const term = opts.terminal === undefined ? terminal() : opts.terminal;
  // discord.js, Bolt, vega and resvg weigh ~130 MB: loaded only when a bot is configured
  const discord = opts.chat?.discord
    ? new (await import('./chat/discord.ts')).DiscordBot({ ...opts.chat.discord, store, config, log })
    : null;
  const slack = opts.chat?.slack ? new (await import('./chat/slack.ts')).SlackBot({ ...opts.chat.slack, store, config, log }) : null;
  const targets = [...(term ? [term] : []), ...(discord?.targets() ?? []), ...(slack?.targets() ?? [])];
  const routing = {
    terminal: term !== null,
    discord: discord ? (opts.chat?.discord?.channel ?? '') : undefined,
    slack: slack ? (opts.chat?.slack?.channel ?? '') : undefined,
  };
  const engine = makeEngine(store, config, routing);
  const toWarnings = alertRoute(config, routing);
  const reports = new ReportSchedule(store, config, (run) => toWarnings(run, 'warning'));
  const dispatcher = new Dispatcher(store, targets, { ...opts.delivery, log });
  // The bots connect in the background: ingest and the terminal never wait on a chat platform. The outbox of
  // a platform is delivered as soon as it is reachable.
  let refused: (err: Error) => void = () => {};
  const failure = new Promise<Error>((done) => (refused = done));
  discord?.connect({ onUp: () => dispatcher.wake('discord:'), onFatal: (err) => refused(err) });
  slack?.connect({ onUp: () => dispatcher.wake('slack:'), onFatal: (err) => refused(err) });
  // The backlog found at start-up is history: evaluate it, announce only what still fires afterwards.
  let catchingUp = true;
  const ingestor = new Ingestor(
    store,
    config.ingest,
    ingestEvents(log, (r) => {
      retryWhileBusy(
        () => {
          if (engine.evaluate(r.runId, !catchingUp) > 0) void dispatcher.kick();
        },
        (err) => log.warn(`cannot evaluate the rules of run ${r.runId} yet (${err.message}): trying again in 1 s`),
      );
      opts.onBatch?.(r);
    }),
  );
  const live = new LiveIngest(ingestor, opts.roots, config.watch, (err) => log.warn(err.message));
  engine.evaluateBehind(); // batches a stopped process committed but never evaluated
  try {
    await live.start();
  } catch (err) {
    await dispatcher.stop(0);
    await Promise.all([discord?.stop(), slack?.stop()]);
    store.close();
    throw err;
  }
  catchingUp = false;
  engine.caughtUp();
  for (const line of unreadSummary(store, opts.roots)) log.warn(line);
  // each tick also looks at the outbox: rows a previous process left, or `rlwatch outbox retry` re-queued
  const tick = (): void =>
    retryWhileBusy(
      () => {
        engine.tick();
        reports.tick();
        void dispatcher.kick();
      },
      (err) => log.warn(`cannot look at stalls and repeats yet (${err.message}): trying again in 1 s`),
    );
  tick();
  const timer = setInterval(tick, TICK_MS);
  return {
    store,
    live,
    engine,
    dispatcher,
    discord,
    slack,
    failure,
    async stop() {
      clearInterval(timer);
      await live.stop();
      // a last drain; a delivery still in flight after the grace is abandoned and its row stays pending
      void dispatcher.kick();
      await dispatcher.stop(STOP_GRACE_MS);
      await Promise.all([within(discord?.stop(), STOP_GRACE_MS / 2), within(slack?.stop(), STOP_GRACE_MS / 2)]);
      store.close();
    },
  };
}
