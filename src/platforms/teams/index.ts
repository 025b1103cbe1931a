/**
 * Microsoft Teams through a Workflows (Power Automate) webhook (TEAMS_WEBHOOK_URL, more in `teams.urls`): each
 * outbox row is posted as an Adaptive Card. Outbound only: acks and mutes go through the CLI or another platform.
 */
import { jsonWebhookPlatform } from '../outbound.ts';
import { teamsMessage } from './card.ts';

export const teams = jsonWebhookPlatform('teams', 'TEAMS_WEBHOOK_URL', teamsMessage);
