import type { Config } from '../config/schema.ts';
import { globMatch } from '../engine/duration.ts';

export type Platform = 'discord' | 'slack';

/** Target names: `console`, `discord:<channel>`, `slack:<channel>`. */
export const targetName = (platform: Platform, channel: string): string => `${platform}:${channel}`;

/** The channels of one platform an alert of `run` with `severity` goes to: the matching routes, else the
 * default channel. */
export function channelsFor(config: Config, platform: Platform, defaultChannel: string | undefined, run: string, severity: string): string[] {
  const routes = config[platform].routes.filter(
    (r) => globMatch(r.runs, run) && (r.severity === undefined || r.severity.includes(severity as never)),
  );
  if (routes.length > 0) return [...new Set(routes.map((r) => r.channel))];
  return defaultChannel ? [defaultChannel] : [];
}

/** Every channel of a platform that may receive alerts (one delivery target each). */
export function allChannels(config: Config, platform: Platform, defaultChannel: string | undefined): string[] {
  return [...new Set([...(defaultChannel ? [defaultChannel] : []), ...config[platform].routes.map((r) => r.channel)])];
}
