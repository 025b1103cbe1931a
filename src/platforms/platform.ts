/**
 * The contract every notification platform implements (Alertmanager's notify/<name>/ idea): one folder under
 * src/platforms/ with its config section, how it reads its settings, and what it creates; one line in
 * src/platforms/index.ts registers it. Nothing outside src/platforms/ names a platform.
 */
import type * as z from '../lib/zod.ts';
import type { Config } from '../config/schema.ts';
import type { Log } from '../lib/log.ts';
import type { Target } from '../notify/dispatcher.ts';
import type { StoreContract } from '../store/contract.ts';

export { commonSection, router, type Route } from '../notify/routing.ts';

/** What a platform instance is given: the store for bots answering commands, the config, the log. */
export interface PlatformContext {
  store: StoreContract;
  config: Config;
  log: Log;
  /** the platform is reachable again: deliver what waits in the outbox for its targets now */
  wake(): void;
  /** a command or a button changed an alert (an ack, a mute): deliver the card edits it queued now, not on the
   * next tick (absent where nothing delivers, e.g. a test's pipeline) */
  deliverNow?(): void;
}

/** A running platform: its outbox targets (named `<platform id>:<destination>`), and its bot, if any. Which of them an
 * alert goes to is the platform's `route`. */
export interface PlatformInstance {
  targets: Target[];
  /** connected and answering commands (tests wait for it) */
  ready?(): boolean;
  /** connects in the background: never holds up ingest (see src/notify/connect.ts) */
  start?(): void;
  /** within about a second, whatever the platform's state */
  stop?(): Promise<void>;
  /** rejects never; resolves with an error the platform can never recover from (a refused token) */
  failure?: Promise<Error>;
  /** resolves when the work its deliveries left running has ended (a chart attached to a card after its post) */
  settled?(): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: the platform list holds platforms of every section and settings type
export interface Platform<Section = any, Settings = any> {
  /** the config key, the target prefix, the name in logs: `discord`, `webhook`, ... */
  id: string;
  /** its section of rlwatch.yaml, with its defaults (composed into the config schema); `z.prefault(..., {})` so
   * that a config without the key still gets them */
  section: z.ZodMiniType<Section>;
  /** its settings from its section and the environment (tokens, URLs); null when it is not configured */
  settings(section: Section, env: NodeJS.ProcessEnv): Settings | null;
  /** the target names an alert of `run` with `severity` goes to, from the settings alone: the process that delivers
   * routes the engine's platform-neutral rows with it (`alertRoute`), and `rlwatch route test` answers from it */
  route(settings: Settings, config: Config): (run: string, severity: string) => string[];
  /** heavy client libraries are imported here, lazily: a run without the platform never loads them */
  create(settings: Settings, ctx: PlatformContext): Promise<PlatformInstance>;
  /** what to do about a delivery error of its targets (an unknown channel, a missing permission), in one
   * sentence; undefined when the error says it already (`rlwatch notify --test` prints it) */
  advice?(err: Error): string | undefined;
}

/** A platform's parsed section of the config (composed in by its id). */
export const sectionOf = <Section>(config: Config, platform: Platform<Section>): Section =>
  (config as unknown as Record<string, Section>)[platform.id] as Section;
