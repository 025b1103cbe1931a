/**
 * Mattermost through an incoming webhook (MATTERMOST_WEBHOOK_URL, more in `mattermost.urls`), Slack-style
 * attachments. Outbound only: acks and mutes go through the CLI or another platform.
 */
import { jsonWebhookPlatform } from '../outbound.ts';
import { mattermostMessage } from './message.ts';

export const mattermost = jsonWebhookPlatform('mattermost', 'MATTERMOST_WEBHOOK_URL', mattermostMessage);
