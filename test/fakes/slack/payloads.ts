/**
 * Builders for the Socket Mode envelopes the fake pushes, shaped like Slack's own
 * (slash command payloads are the form fields of the HTTP variant, as strings; block_actions payloads are JSON).
 */
import { randomBytes, randomUUID } from 'node:crypto';

export interface Workspace {
  teamId: string;
  teamDomain: string;
  appId: string;
  botUserId: string;
  botId: string;
  /** The legacy verification token Slack still puts in payloads. */
  verificationToken: string;
}

let triggerCounter = 0;
export function triggerId(): string {
  triggerCounter += 1;
  return `${1000000000 + triggerCounter}.${100000 + triggerCounter}.${randomBytes(16).toString('hex')}`;
}

export function envelopeId(): string {
  return randomUUID();
}

export interface SlashCommandInput {
  command: string;
  text: string;
  userId: string;
  userName: string;
  channelId: string;
  channelName: string;
  responseUrl: string;
}

export function slashCommandPayload(ws: Workspace, c: SlashCommandInput): Record<string, unknown> {
  return {
    token: ws.verificationToken,
    team_id: ws.teamId,
    team_domain: ws.teamDomain,
    channel_id: c.channelId,
    channel_name: c.channelName,
    user_id: c.userId,
    user_name: c.userName,
    command: c.command,
    text: c.text,
    api_app_id: ws.appId,
    is_enterprise_install: 'false',
    response_url: c.responseUrl,
    trigger_id: triggerId(),
  };
}

export interface BlockActionInput {
  actionId: string;
  blockId: string;
  value: string | undefined;
  actionType: string;
  actionText: string;
  userId: string;
  userName: string;
  channelId: string;
  channelName: string;
  messageTs: string;
  message: { text: string; blocks: unknown[]; user?: string; botId?: string; threadTs?: string };
  responseUrl: string;
}

export function blockActionPayload(ws: Workspace, a: BlockActionInput): Record<string, unknown> {
  const actionTs = `${(Date.now() / 1000).toFixed(6)}`;
  const action: Record<string, unknown> = {
    action_id: a.actionId,
    block_id: a.blockId,
    type: a.actionType,
    action_ts: actionTs,
    text: { type: 'plain_text', text: a.actionText, emoji: true },
  };
  if (a.value !== undefined) action['value'] = a.value;
  const message: Record<string, unknown> = {
    type: 'message',
    user: a.message.user ?? ws.botUserId,
    ts: a.messageTs,
    text: a.message.text,
    blocks: a.message.blocks,
    team: ws.teamId,
  };
  if (a.message.botId !== undefined) message['bot_id'] = a.message.botId;
  if (a.message.threadTs !== undefined) message['thread_ts'] = a.message.threadTs;
  return {
    type: 'block_actions',
    user: { id: a.userId, username: a.userName, name: a.userName, team_id: ws.teamId },
    api_app_id: ws.appId,
    token: ws.verificationToken,
    container: { type: 'message', message_ts: a.messageTs, channel_id: a.channelId, is_ephemeral: false },
    trigger_id: triggerId(),
    team: { id: ws.teamId, domain: ws.teamDomain },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: a.channelId, name: a.channelName },
    message,
    state: { values: {} },
    response_url: a.responseUrl,
    actions: [action],
  };
}

interface BlockLike {
  block_id?: unknown;
  elements?: unknown;
  accessory?: unknown;
}

/** Find the block (and the element) holding `actionId` in a message's blocks, as Slack would report it. */
export function locateAction(
  blocks: unknown[],
  actionId: string,
): { blockId: string | undefined; type: string | undefined; text: string | undefined; value: string | undefined } {
  for (const raw of blocks) {
    if (raw === null || typeof raw !== 'object') continue;
    const block = raw as BlockLike;
    const candidates: unknown[] = [];
    if (Array.isArray(block.elements)) candidates.push(...(block.elements as unknown[]));
    if (block.accessory !== undefined) candidates.push(block.accessory);
    for (const el of candidates) {
      if (el === null || typeof el !== 'object') continue;
      const e = el as { action_id?: unknown; type?: unknown; text?: unknown; value?: unknown };
      if (e.action_id !== actionId) continue;
      const text =
        e.text !== null && typeof e.text === 'object' && typeof (e.text as { text?: unknown }).text === 'string'
          ? (e.text as { text: string }).text
          : undefined;
      return {
        blockId: typeof block.block_id === 'string' ? block.block_id : undefined,
        type: typeof e.type === 'string' ? e.type : undefined,
        text,
        value: typeof e.value === 'string' ? e.value : undefined,
      };
    }
  }
  return { blockId: undefined, type: undefined, text: undefined, value: undefined };
}

const MIME: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  txt: 'text/plain',
  csv: 'text/csv',
  json: 'application/json',
  pdf: 'application/pdf',
};

export function mimeOf(filename: string): { mimetype: string; filetype: string } {
  const ext = /\.([a-z0-9]+)$/i.exec(filename)?.[1]?.toLowerCase() ?? 'binary';
  return { mimetype: MIME[ext] ?? 'application/octet-stream', filetype: ext };
}
