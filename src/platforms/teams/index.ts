/**
 * Microsoft Teams through a Workflows (Power Automate) webhook: each outbox row is posted as an Adaptive Card.
 * Outbound only: no buttons, no commands (acks and mutes go through the CLI or another platform).
 */
import { z } from 'zod';
import type { Notification } from '../../engine/notification.ts';
import { destinations, post, urlsField } from '../outbound.ts';
import { commonSection, router, type Platform } from '../platform.ts';
import { teamsMessage } from './card.ts';

const section = z
  .object({
    ...commonSection,
    /** more Workflows URLs by name, for routes (the default one is TEAMS_WEBHOOK_URL) */
    urls: urlsField,
  })
  .strict()
  .prefault({});

type Section = z.infer<typeof section>;
interface Settings {
  section: Section;
  urls: Map<string, string>;
  fallback: string | undefined;
}

export const teams: Platform<Section, Settings> = {
  id: 'teams',
  section,
  settings(s, env) {
    const d = destinations('teams', s, env.TEAMS_WEBHOOK_URL || undefined, 'TEAMS_WEBHOOK_URL');
    return d && { section: s, ...d };
  },
  async create(settings, { store }) {
    return {
      targets: [...settings.urls].map(([name, url]) => ({
        name: `teams:${name}`,
        async deliver(n: Notification) {
          await post(`teams ${name}`, url, JSON.stringify(teamsMessage(store, n)), { 'content-type': 'application/json' });
        },
      })),
      route: router('teams', settings.section, settings.fallback),
    };
  },
};
