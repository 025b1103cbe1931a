/**
 * Routes: the fields every platform's config section shares (default destination, routes by run and severity,
 * quiet hours), and the route an alert takes.
 */
import { globMatch } from '../lib/duration.ts';
import * as z from '../lib/zod.ts';
import { nonEmpty } from '../lib/zod.ts';
import { QuietSchema, type Quiet } from './quietHours.ts';

export const Severity = z.enum(['info', 'warning', 'critical']);

const routeShape = {
  runs: z._default(nonEmpty(), '*'),
  severity: z.optional(z.array(Severity).check(z.minLength(1))),
  channel: nonEmpty(),
  /** the section's quiet hours, replaced for this route's alerts */
  quiet: z.optional(QuietSchema),
};

/** Alerts of matching runs (and severities) go to `channel` (a platform's destination id) instead of the default. */
export const RouteSchema = z.strictObject(routeShape);
export type Route = z.infer<typeof RouteSchema>;

/** The fields every platform's section has: the default destination, routes by run glob and severity, quiet hours. */
export const commonSection = {
  /** where alerts go by default (a channel id, a chat id, an address, a URL name ...) */
  channel: z.optional(nonEmpty()),
  routes: z._default(z.array(RouteSchema), []),
  /** when new alerts are held rather than posted (src/notify/quietHours.ts) */
  quiet: z.optional(QuietSchema),
};

/** `commonSection` with a platform's `mention` (src/notify/mentions.ts), on the section and on each route. */
export function pagingSection<M extends z.ZodMiniType>(mention: M) {
  return {
    ...commonSection,
    routes: z._default(z.array(z.strictObject({ ...routeShape, mention: z.optional(mention) })), []),
    /** who is notified of the alerts that page (critical ones unless `mention.severity` says more) */
    mention: z.optional(mention),
  };
}

/** The routing part of a platform's section. */
export interface Routed {
  routes: readonly Route[];
  quiet?: Quiet;
}

/** The first route an alert of `run` with `severity` takes to `dest`; undefined when none does (the default
 * destination's alerts): the section's own settings then apply. */
export function routeTo<R extends Route>(
  routes: readonly R[],
  dest: string,
  run: string,
  severity: string,
): R | undefined {
  return routes.find(
    (r) => r.channel === dest && globMatch(r.runs, run) && (r.severity?.includes(severity as never) ?? true),
  );
}

/** The quiet hours of the alerts of a run and severity at `dest`: their route's, else the section's. */
export function quietOf(section: Routed, dest: string): (run: string, severity: string) => Quiet | undefined {
  return (run, severity) => routeTo(section.routes, dest, run, severity)?.quiet ?? section.quiet;
}

/** Target names: `console`, `<platform id>:<destination>`. */
export const targetName = (platform: string, destination: string): string => `${platform}:${destination}`;

/** The destinations an alert of `run` with `severity` goes to: the matching routes, else the default. */
export function destinationsFor(
  section: Routed,
  defaultDest: string | undefined,
  run: string,
  severity: string,
): string[] {
  const routes = section.routes.filter(
    (r) => globMatch(r.runs, run) && (r.severity === undefined || r.severity.includes(severity as never)),
  );
  if (routes.length > 0) return [...new Set(routes.map((r) => r.channel))];
  return defaultDest ? [defaultDest] : [];
}

/** Every destination of a platform that may receive alerts (one delivery target each). */
export function allDestinations(section: Routed, defaultDest: string | undefined): string[] {
  return [...new Set([...(defaultDest ? [defaultDest] : []), ...section.routes.map((r) => r.channel)])];
}

/**
 * A platform's router: the target names of an alert. Info (trends up, too-easy groups) stays on the terminal
 * unless a route names `info` itself: a channel people read is for what needs doing.
 */
export function router(platform: string, section: Routed, defaultDest: string | undefined) {
  return (run: string, severity: string): string[] => {
    const wanted =
      severity !== 'info' ||
      section.routes.some((r) => r.severity?.includes('info') === true && globMatch(r.runs, run));
    return wanted ? destinationsFor(section, defaultDest, run, severity).map((d) => targetName(platform, d)) : [];
  };
}

/** Where a chat bot takes commands from, and what each of those channels may read about. */
export const CommandsSchema = z.prefault(
  z.strictObject({
    /** the channels commands are taken from; unset: the alert channel and the routes' channels */
    channels: z.optional(z.array(nonEmpty())),
    /** every accepted channel sees every run; off: a channel sees the runs whose alerts are routed to it */
    all_runs: z._default(z.boolean(), false),
  }),
  {},
);
export type Commands = z.infer<typeof CommandsSchema>;

/** What a command from one place may do: nothing (`refused` says why), or read about the runs `seesRun` admits. */
export type Place = { refused: string } | { refused?: undefined; seesRun: (run: string) => boolean };

/** The refusal of a command from a place rlwatch does not take commands from: it names no channel. */
export const NOT_HERE =
  "rlwatch does not take commands here: use its alert channel (or a channel listed in the bot's commands.channels).";

const SEVERITIES = Severity.options;

/**
 * The places a chat bot takes commands from, and the runs each sees. A command is taken only from an accepted
 * channel: `commands.channels`, else the alert channel and the routes' channels. An accepted channel sees a run
 * when some severity of the run's alerts is routed to it (the default channel sees every run no route takes
 * entirely elsewhere); a channel alerts never go to (an operators' channel listed in `commands.channels`) and
 * every channel under `commands.all_runs` see every run.
 */
export function commandPlaces(section: Routed & { commands?: Commands }, defaultDest: string | undefined) {
  const destinations = allDestinations(section, defaultDest);
  const accepted = new Set(section.commands?.channels ?? destinations);
  const allRuns = section.commands?.all_runs === true;
  return (channel: string): Place => {
    if (!accepted.has(channel)) return { refused: NOT_HERE };
    if (allRuns || !destinations.includes(channel)) return { seesRun: () => true };
    return {
      seesRun: (run) => SEVERITIES.some((s) => destinationsFor(section, defaultDest, run, s).includes(channel)),
    };
  };
}
