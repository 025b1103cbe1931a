/**
 * Who a message pages, from the config alone: the route's mention over the section's, critical alerts only unless
 * `mention.severity` widens it, firing cards only (acked and resolved ones page nobody), and ids only in the shapes
 * each platform uses.
 */
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.ts';
import type { NotificationItem } from '../../src/engine/notification.ts';
import { messageCards } from '../../src/notify/delivery.ts';
import { mentionOf } from '../../src/notify/mentions.ts';
import { paged } from '../../src/platforms/discord/bot.ts';
import { discord, type DiscordMention } from '../../src/platforms/discord/index.ts';

const ROLE = '123456789012345678';
const ONCALL = '223456789012345678';
const PROD_ROLE = '323456789012345678';

const item = (
  alertId: number,
  severity: string,
  state: Partial<NonNullable<NotificationItem['state']>> = {},
): NotificationItem => ({
  alertId,
  kind: 'firing',
  severity,
  rule: `rule_${alertId}`,
  metric: 'm',
  summary: 's',
  step: 1,
  epoch: null,
  recent: [],
  examples: null,
  state: { startsAt: 1, firedStep: 1, ack: null, muted: false, resolved: null, ...state },
});
const cards = (run: string, ...items: NotificationItem[]) => messageCards({ run, items });

const discordSection = (section: unknown) => discord.section.parse(section);

describe('mentionOf', () => {
  const section = discordSection({
    channel: 'C1',
    mention: { roles: [ROLE] },
    routes: [
      { runs: 'prod-*', channel: 'C2', mention: { roles: [PROD_ROLE], severity: ['warning', 'critical'] } },
      { runs: 'prod-*', severity: ['info'], channel: 'C2' },
    ],
  });

  it("pages the section's mention for a firing critical; a warning, an acked and a resolved critical page nobody", () => {
    expect(mentionOf(section, 'C1', cards('dev-1', item(1, 'critical')))).toEqual({
      roles: [ROLE],
      users: [],
      here: false,
      severity: ['critical'],
    });
    expect(mentionOf(section, 'C1', cards('dev-1', item(2, 'warning')))).toBeNull();
    const ack = { by: 'U1', name: 'ana', at: 2, comment: null };
    expect(mentionOf(section, 'C1', cards('dev-1', item(3, 'critical', { ack })))).toBeNull();
    const resolved = { step: 2, at: 2, summary: 'ok' };
    expect(mentionOf(section, 'C1', cards('dev-1', item(4, 'critical', { resolved })))).toBeNull();
  });

  it("a route's mention replaces the section's, with its own severities; a route without one keeps the section's", () => {
    expect(mentionOf(section, 'C2', cards('prod-1', item(1, 'warning')))?.roles).toEqual([PROD_ROLE]);
    // info goes to C2 by the second route, which names no mention: the section's, which pages criticals only
    expect(mentionOf(section, 'C2', cards('prod-1', item(2, 'info')))).toBeNull();
  });

  it("a card pages the first matching route's mention to the channel; a message pages the mentions of all its cards", () => {
    const two = discordSection({
      channel: 'C1',
      routes: [
        { runs: 'a-*', channel: 'C2', mention: { roles: [ROLE] } },
        { runs: 'a-*', severity: ['critical'], channel: 'C2', mention: { users: [ONCALL] } },
      ],
    });
    // the first matching route to C2 decides per card: both routes match a-* criticals, so the first one's
    expect(mentionOf(two, 'C2', cards('a-1', item(1, 'critical')))?.roles).toEqual([ROLE]);
    const widened = discordSection({
      channel: 'C1',
      mention: { users: [ONCALL], severity: ['warning', 'critical'] },
      routes: [{ runs: 'a-*', severity: ['critical'], channel: 'C1', mention: { roles: [ROLE] } }],
    });
    const m = mentionOf(widened, 'C1', cards('a-1', item(1, 'critical'), item(2, 'warning')));
    expect(m && { roles: m.roles, users: m.users }).toEqual({ roles: [ROLE], users: [ONCALL] });
  });
});

describe("each platform's mention ids", () => {
  it('refuses a Discord id YAML read as a number (its last digits lost), and ids of the wrong shape', () => {
    // biome-ignore lint/correctness/noPrecisionLoss: a snowflake written as a YAML number has already lost its last digits
    expect(ConfigSchema.safeParse({ discord: { mention: { roles: [123456789012345678] } } }).success).toBe(false);
    expect(ConfigSchema.safeParse({ discord: { mention: { users: ['<@123>'] } } }).success).toBe(false);
    expect(ConfigSchema.safeParse({ slack: { mention: { groups: ['<!channel>'] } } }).success).toBe(false);
    expect(
      ConfigSchema.safeParse({
        slack: { routes: [{ channel: 'C1', mention: { users: ['U0ANA'], groups: ['S0ONCALL'] } }] },
      }).success,
    ).toBe(true);
    expect(ConfigSchema.safeParse({ telegram: { mention: { users: ['ana oncall'] } } }).success).toBe(false);
    expect(ConfigSchema.safeParse({ email: { mention: { to: ['a@x.example\r\nBcc: b@y.example'] } } }).success).toBe(
      false,
    );
    expect(ConfigSchema.safeParse({ discord: { mention: { roles: [ROLE], severity: [] } } }).success).toBe(false);
  });

  it("Discord: only the configured ids may ping; `here` allows @everyone's parse, so the text's own @everyone is broken", () => {
    const text = 'CRITICAL · x firing · @everyone <@42> <@&43> @here';
    const m: DiscordMention = { roles: [ROLE], users: [ONCALL], here: false, severity: ['critical'] };
    expect(paged(text, m)).toEqual({
      content: `<@&${ROLE}> <@${ONCALL}>\n${text}`,
      allowedMentions: { parse: [], roles: [ROLE], users: [ONCALL] },
    });
    const here = paged(text, { ...m, roles: [], users: [], here: true });
    expect(here.allowedMentions).toEqual({ parse: ['everyone'], roles: [], users: [] });
    expect(here.content.startsWith('@here\n')).toBe(true);
    expect(here.content.split('\n')[1]).toBe('CRITICAL · x firing · @\u200beveryone <@42> <@&43> @\u200bhere');
    expect(paged(text, null)).toEqual({ content: text, allowedMentions: { parse: [] } });
  });
});
