/**
 * `rlwatch notify --test [PLATFORM]`: one test card, with a chart, to every target `start` would deliver to (or
 * those of one platform), through the targets each platform's `create()` makes, as the outbox delivers to them.
 * Each target's result is kept: ok, or the platform's error and what to do about it.
 */
import { hostname } from 'node:os';
import type { Config } from '../config/schema.ts';
import type { Notification } from '../engine/notification.ts';
import { UserError } from '../lib/errors.ts';
import type { Log } from '../lib/log.ts';
import { redactingTarget, redactorOf } from '../notify/redact.ts';
import { PLATFORMS } from '../platforms/index.ts';
import { sectionOf, type Platform, type PlatformInstance } from '../platforms/platform.ts';
import { urgencyOf } from '../store/outbox.ts';
import { SqliteAsyncStore } from '../store/sqlite/sqliteAsync.ts';
import { Store } from '../store/sqlite/store.ts';

/** The run and rule the test card names: no real run or rule is called so. */
export const TEST_RUN = 'rlwatch-test';
export const TEST_RULE = 'test_notification';
const SEVERITY = 'info';

/** How long a bot that connects before it can post (a gateway, a socket) gets to come up. */
const CONNECT_MS = 20_000;

export interface TargetResult {
  /** the target (`<platform>:<destination>`), or the platform alone when it could not be set up */
  target: string;
  ok: boolean;
  /** the platform's error */
  error?: string;
  /** what to do about it, when the platform knows */
  advice?: string;
}

/**
 * The test card: it says it is a test where a card says what fired. Its alert id, 0, is no alert's (ids start at
 * 1), so its buttons, pressed where a running `start` answers them, change nothing.
 */
export function testNotification(host: string, now: number): Notification {
  // a reward rising from 0.1 towards 0.6: a chart shaped like a run's
  const points = Array.from({ length: 60 }, (_, i) => ({
    step: i + 1,
    value: Math.round((0.1 + 0.5 * (1 - Math.exp(-i / 20))) * 1000) / 1000,
  }));
  const step = points.length;
  return {
    run: TEST_RUN,
    items: [
      {
        alertId: 0,
        kind: 'firing',
        severity: SEVERITY,
        rule: TEST_RULE,
        metric: 'reward',
        summary:
          `This is a test notification from rlwatch notify --test on ${host}: alerts reach this channel. ` +
          'No run is affected and nothing needs doing.',
        step,
        epoch: null,
        recent: points.slice(-50).map((p) => p.value),
        examples: null,
        hint: 'nothing: this card is a test, and its buttons name no alert',
        state: { startsAt: now, firedStep: step, ack: null, muted: false, resolved: null },
        chart: { points, threshold: null },
      },
    ],
  };
}

/** The platforms to test with their settings: every configured one, or `only`. */
function chosen(config: Config, env: NodeJS.ProcessEnv, only: string | undefined): Array<[Platform, unknown]> {
  if (only !== undefined && !PLATFORMS.some((p) => p.id === only)) {
    throw new UserError(`no platform '${only}': one of ${PLATFORMS.map((p) => p.id).join(', ')}`);
  }
  const configured = PLATFORMS.filter((p) => only === undefined || p.id === only)
    .map((p): [Platform, unknown] => [p, p.settings(sectionOf(config, p), env)])
    .filter(([, settings]) => settings !== null);
  if (configured.length > 0) return configured;
  throw new UserError(
    only !== undefined
      ? `${only} is not configured: its variables are in .env.example`
      : 'no chat platform is configured: nothing to test (the variables are in .env.example)',
  );
}

/** Resolves when `p` does, or with null after `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((done) => (timer = setTimeout(() => done(null), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sends the test card to each target of the configured platforms (or of `only`), one attempt each, and returns
 * each target's result. A platform's bad settings throw, as they stop `start`. The messages posted are recorded
 * in a scratch store in memory: the database and the outbox of a running `start` are left alone.
 */
export async function notifyTest(opts: {
  config: Config;
  log: Log;
  env?: NodeJS.ProcessEnv;
  only?: string;
  connectMs?: number;
}): Promise<TargetResult[]> {
  const { config, log } = opts;
  const platforms = chosen(config, opts.env ?? process.env, opts.only);
  const scratch = Store.open(':memory:');
  const store = new SqliteAsyncStore(scratch);
  // a posted card is recorded against its alert; the test card's, 0, is in no table
  scratch.db.pragma('foreign_keys = OFF');
  const runId = scratch.runs.ensure(TEST_RUN, '').id;
  const n = testNotification(hostname(), Date.now());
  const key = `test/${Date.now()}`;
  const running: PlatformInstance[] = [];
  try {
    const results = await Promise.all(
      platforms.map(async ([p, settings]): Promise<TargetResult[]> => {
        let up: () => void = () => {};
        const connected = new Promise<void>((done) => (up = done));
        let instance: PlatformInstance;
        try {
          instance = await p.create(settings, { store, config, log, wake: () => up() });
        } catch (err) {
          return [{ target: p.id, ok: false, error: (err as Error).message }];
        }
        running.push(instance);
        // a bot (it says when it is `ready`) posts only once connected, and calls `wake` then; the others post at
        // once, and their `start` only reads commands, which a running `start` does
        if (instance.ready) {
          instance.start?.();
          const refused = await within(
            Promise.race([connected.then(() => null), instance.failure ?? new Promise<never>(() => {})]),
            opts.connectMs ?? CONNECT_MS,
          );
          if (refused) return instance.targets.map((t) => ({ target: t.name, ok: false, error: refused.message }));
        }
        const outcomes = await Promise.all(
          instance.targets.map(async (t): Promise<TargetResult> => {
            try {
              await redactingTarget(t, redactorOf(config)).deliver(n, key, runId, urgencyOf(SEVERITY));
              return { target: t.name, ok: true };
            } catch (err) {
              const e = err as Error;
              const advice = p.advice?.(e);
              return { target: t.name, ok: false, error: e.message, ...(advice ? { advice } : {}) };
            }
          }),
        );
        await instance.settled?.();
        return outcomes;
      }),
    );
    return results.flat();
  } finally {
    await Promise.all(running.map((i) => i.stop?.()));
    await store.close();
  }
}

/** One line per target, then how many were reached. */
export function describeResults(results: readonly TargetResult[]): string {
  const lines = results.map((r) =>
    r.ok ? `ok      ${r.target}` : `FAILED  ${r.target}: ${r.error}${r.advice ? `. Fix: ${r.advice}` : ''}`,
  );
  const reached = results.filter((r) => r.ok).length;
  lines.push(`${reached} of ${results.length} target${results.length === 1 ? '' : 's'} reached`);
  return lines.join('\n');
}
