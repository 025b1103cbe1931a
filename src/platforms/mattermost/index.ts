/**
 * Mattermost through an incoming webhook (Slack-style attachments). Outbound only: acks and mutes go through
 * the CLI or another platform.
 */
import { z } from 'zod';
import type { Notification } from '../../engine/notification.ts';
import { destinations, post, urlsField } from '../outbound.ts';
import { commonSection, router, type Platform } from '../platform.ts';
import { mattermostMessage } from './message.ts';

const section = z
  .object({
    ...commonSection,
    /** more incoming-webhook URLs by name, for routes (the default one is MATTERMOST_WEBHOOK_URL) */
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

export const mattermost: Platform<Section, Settings> = {
  id: 'mattermost',
  section,
  settings(s, env) {
    const d = destinations('mattermost', s, env.MATTERMOST_WEBHOOK_URL || undefined, 'MATTERMOST_WEBHOOK_URL');
    return d && { section: s, ...d };
  },
  async create(settings, { store }) {
    return {
      targets: [...settings.urls].map(([name, url]) => ({
        name: `mattermost:${name}`,
        async deliver(n: Notification) {
          await post(`mattermost ${name}`, url, JSON.stringify(mattermostMessage(store, n)), { 'content-type': 'application/json' });
        },
      })),
      route: router('mattermost', settings.section, settings.fallback),
    };
  },
};
