/**
 * `rlwatch route test RUN SEVERITY`: the destinations, mentions and quiet hours an alert would get, read from a config
 * whose routes are written here (the expected answers are read off that config by hand), and the same answer as the
 * dispatcher's routing at delivery gives.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alertRoute, platformsFromEnv } from '../../src/app/start.ts';
import { routeTest } from '../../src/app/routeTest.ts';
import { loadConfig } from '../../src/app/loadConfig.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { UserError } from '../../src/lib/errors.ts';
import { tempDir } from '../helpers.ts';
import { rlwatch } from '../integration/cli.ts';

const DEFAULT = '444444444444444444';
const PAGER = '222222222222222222';
const ONCALL_ROLE = '111111111111111111';
const ONCALL_USER = '333333333333333333';
const YAML = `discord:
  mention: { roles: ['${ONCALL_ROLE}'] }
  quiet: { hours: '22:00-07:00', timezone: Europe/Paris }
  routes:
    - runs: 'gpu-a/*'
      severity: [critical]
      channel: '${PAGER}'
      mention: { users: ['${ONCALL_USER}'], severity: [critical, warning] }
      quiet: { hours: '01:00-05:00', criticals: hold }
`;
const ENV = { DISCORD_TOKEN: 't', DISCORD_CHANNEL_ID: DEFAULT };

function configFile(): string {
  const file = join(tempDir('rlw-routetest-'), 'rlwatch.yaml');
  writeFileSync(file, YAML);
  return file;
}

describe('rlwatch route test', () => {
  it("a critical of a gpu-a run goes to the pager channel, notifying the route's user, held in the route's quiet hours", () => {
    const r = rlwatch(['--config', configFile(), 'route', 'test', 'gpu-a/grpo', 'critical', '--json'], { env: ENV });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      run: 'gpu-a/grpo',
      severity: 'critical',
      rule: null,
      platforms: ['discord'],
      destinations: [
        { target: 'console', platform: 'terminal', channel: 'console', mention: null, quiet: null },
        {
          target: `discord:${PAGER}`,
          platform: 'discord',
          channel: PAGER,
          mention: { roles: [], users: [ONCALL_USER], here: false },
          quiet: { hours: '01:00-05:00', timezone: 'UTC', criticals: 'hold', holds: true },
        },
      ],
    });
  });

  it('elsewhere the section applies: its channel, its role paged for criticals only, its quiet hours (criticals page)', async () => {
    const r = rlwatch(
      ['--config', configFile(), 'route', 'test', 'gpu-b/grpo', 'critical', '--rule', 'mode_collapse'],
      { env: ENV },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      'an alert of run gpu-b/grpo, severity critical (rule mode_collapse) goes to:\n' +
        '  terminal console\n' +
        `  discord ${DEFAULT}; notifies {"roles":["${ONCALL_ROLE}"],"users":[],"here":false}; ` +
        'quiet 22:00-07:00 Europe/Paris: posted at once\n',
    );
    const { config } = await loadConfig(configFile());
    const warning = routeTest(config, platformsFromEnv(config, ENV), 'gpu-b/grpo', 'warning');
    expect(warning.destinations.map((d) => [d.target, d.mention])).toEqual([
      ['console', null],
      [`discord:${DEFAULT}`, null],
    ]);
  });

  it('answers as the router at delivery routes, for every severity and run', async () => {
    const { config } = await loadConfig(configFile());
    const platforms = platformsFromEnv(config, ENV);
    const route = alertRoute(config, platforms, true);
    for (const run of ['gpu-a/grpo', 'gpu-b/ppo']) {
      for (const severity of ['info', 'warning', 'critical']) {
        expect(routeTest(config, platforms, run, severity).destinations.map((d) => d.target)).toEqual(
          route(run, severity),
        );
      }
    }
    expect(routeTest(config, platforms, 'gpu-a/grpo', 'info').destinations.map((d) => d.target)).toEqual(['console']);
  });

  it('refuses a severity that is none, and a rule that does not alert at the severity asked', () => {
    const config = ConfigSchema.parse({});
    expect(() => routeTest(config, {}, 'r', 'urgent')).toThrow(UserError);
    // an early warning that escalates alerts at both; a trend at its rise's and its fall's
    expect(() => routeTest(config, {}, 'r', 'info', 'mode_collapse')).toThrow(
      'rule mode_collapse alerts at warning or critical, not info',
    );
    expect(routeTest(config, {}, 'r', 'warning', 'mode_collapse').severity).toBe('warning');
    expect(() => routeTest(config, {}, 'r', 'critical', 'reward_trend')).toThrow(
      'rule reward_trend alerts at info or warning, not critical',
    );
    expect(() => routeTest(config, {}, 'r', 'warning', 'no_such_rule')).toThrow('no rule no_such_rule watches run r');
  });
});
