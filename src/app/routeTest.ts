/**
 * `rlwatch route test RUN SEVERITY [--rule R]`: where an alert of a run and severity goes, as the process that
 * delivers routes it (the config and the chat settings of this host's environment, `alertRoute`): each destination
 * with who its post notifies and its quiet hours (Alertmanager's `amtool config routes test`). Run it where the bot
 * runs: a watcher routes nothing.
 */
import type { Config } from '../config/schema.ts';
import { ruleBookFor } from '../engine/presets/index.ts';
import { UserError } from '../lib/errors.ts';
import type { MentionBase, Paged } from '../notify/mentions.ts';
import { holds, type Quiet } from '../notify/quietHours.ts';
import { quietOf, routeTo, Severity, type Routed } from '../notify/routing.ts';
import { PLATFORMS } from '../platforms/index.ts';
import { sectionOf } from '../platforms/platform.ts';
import { alertRoute, type PlatformSettings } from './start.ts';

export interface Destination {
  /** the outbox target: `console`, or `<platform>:<channel>` */
  target: string;
  platform: string;
  channel: string;
  /** who a post of the alert there notifies (the platform's mention fields), or null for nobody */
  mention: Record<string, unknown> | null;
  /** the quiet hours of the alert there (its route's, else the section's), and whether they hold it back while on
   * (a critical is posted at once unless `criticals: hold`); null for none */
  quiet: (Quiet & { holds: boolean }) | null;
}

export interface RouteTest {
  run: string;
  severity: string;
  rule: string | null;
  /** the platforms configured here (with their settings): the others route nothing */
  platforms: string[];
  destinations: Destination[];
}

export function routeTest(
  config: Config,
  platforms: PlatformSettings,
  run: string,
  severity: string,
  rule?: string,
): RouteTest {
  if (!Severity.options.includes(severity as never)) {
    throw new UserError(`severity ${severity}: expected ${Severity.options.join(', ')}`);
  }
  if (rule !== undefined) {
    const watched = ruleBookFor(config)
      .forRun(run)
      .find((r) => r.id === rule);
    if (!watched) throw new UserError(`no rule ${rule} watches run ${run}`);
    // a rule that escalates alerts at its severity and at the one it rises to; a trend at its rise's and fall's
    const severities = new Set<string>([watched.severity]);
    if (watched.kind === 'threshold' && watched.escalate) severities.add(watched.escalate.severity);
    if (watched.kind === 'trend' && watched.direction !== 'flat') {
      if (watched.direction !== 'down') severities.add(watched.rise);
      if (watched.direction !== 'up') severities.add(watched.fall);
    }
    if (!severities.has(severity)) {
      throw new UserError(`rule ${rule} alerts at ${[...severities].join(' or ')}, not ${severity}`);
    }
  }
  // the terminal too, as `start` and the bot print what they deliver
  const destinations = alertRoute(
    config,
    platforms,
    true,
  )(run, severity).map((target): Destination => {
    const at = target.indexOf(':');
    if (at < 0) return { target, platform: 'terminal', channel: target, mention: null, quiet: null };
    const id = target.slice(0, at);
    const channel = target.slice(at + 1);
    const platform = PLATFORMS.find((p) => p.id === id)!;
    const section = sectionOf(config, platform) as Routed & Partial<Paged<MentionBase>>;
    const mention =
      (section.routes && routeTo(section.routes as Paged<MentionBase>['routes'], channel, run, severity)?.mention) ??
      section.mention;
    const quiet = quietOf(section, channel)(run, severity);
    return {
      target,
      platform: id,
      channel,
      mention: mention?.severity.includes(severity) ? withoutSeverity(mention) : null,
      quiet: quiet ? { ...quiet, holds: holds(quiet, severity) } : null,
    };
  });
  return { run, severity, rule: rule ?? null, platforms: Object.keys(platforms), destinations };
}

/** A mention's who: its `severity` said which alerts carry it, which the answer already tells. */
function withoutSeverity({ severity: _s, ...who }: MentionBase): Record<string, unknown> {
  return who;
}

/** The answer as lines: one per destination. */
export function describeRoute(r: RouteTest): string {
  const of = `an alert of run ${r.run}, severity ${r.severity}${r.rule ? ` (rule ${r.rule})` : ''}`;
  const lines = [`${of} goes to:`];
  for (const d of r.destinations) {
    const parts = [`  ${d.platform} ${d.channel}`];
    if (d.mention) parts.push(`notifies ${JSON.stringify(d.mention)}`);
    if (d.quiet) {
      const days = d.quiet.days ? ` on ${d.quiet.days.join(',')}` : '';
      parts.push(
        `quiet ${d.quiet.hours} ${d.quiet.timezone}${days}: ${d.quiet.holds ? 'held until they end' : 'posted at once'}`,
      );
    }
    lines.push(parts.join('; '));
  }
  if (r.destinations.every((d) => d.platform === 'terminal')) {
    const configured =
      r.platforms.length > 0 ? `configured here: ${r.platforms.join(', ')}` : 'none is configured here';
    const info = r.severity === 'info' ? '; info goes to chat only where a route names it' : '';
    lines.push(`  no chat destination (${configured}${info})`);
  }
  return lines.join('\n');
}
