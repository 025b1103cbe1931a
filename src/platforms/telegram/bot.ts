/**
 * The Telegram bot: alert cards with Ack/Mute buttons (edited in place as alerts change), charts as photos in
 * reply, and commands and button presses read by long polling getUpdates (no public URL needed).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AlertCard } from '../../notify/cards.ts';
import { deliverCards, recapture } from '../../notify/delivery.ts';
import type { Notification } from '../../engine/notification.ts';
import { UserError } from '../../lib/errors.ts';
import { DeliveryError, type Target } from '../../notify/dispatcher.ts';
import { buttonRequest, changedSomething, interact, type Asker } from '../../interact/interaction.ts';
import { mentionOf } from '../../notify/mentions.ts';
import type { Quiet } from '../../notify/quietHours.ts';
import { commandPlaces, quietOf, type Place, type Route } from '../../notify/routing.ts';
import { renderLineChart } from '../../render/chart.ts';
import { alertChartPng, warmCardCharts } from '../../render/chartOnce.ts';
import type { PlatformContext } from '../platform.ts';
import { BotApi, type TgMessage, type TgUpdate, type TgUser } from './api.ts';
import { commandWords } from './interact.ts';
import type { TelegramMention } from './index.ts';
import { inert, keyboard, pagedHtml, replyHtml, resolvedHtml } from './render.ts';

export interface TelegramSettings {
  token: string;
  apiUrl: string;
  /** every chat alerts may go to; commands are answered in these chats only */
  chats: string[];
  /** the routes and default chat alerts go by: a chat's commands read about the runs routed to it */
  routes: ReadonlyArray<Route & { mention?: TelegramMention }>;
  fallback: string | undefined;
  /** who paging alerts notify, and the quiet hours, of the chats without a route of their own */
  mention?: TelegramMention;
  quiet?: Quiet;
  /** user ids that may ack and mute; empty: anyone in the chats */
  allow: string[];
  /** read commands and button presses (getUpdates); off: alerts only */
  commands: boolean;
  /** how long one getUpdates waits for news */
  pollSeconds: number;
}

const MAX_BACKOFF_MS = 60_000;
const who = (u: TgUser): string => (u.username ? `@${u.username}` : (u.first_name ?? String(u.id)));
/** The name Telegram shows for a user: first and last name (first_name is always there), else the username. */
const shownName = (u: TgUser): string => [u.first_name, u.last_name].filter(Boolean).join(' ') || (u.username ?? '');

export class TelegramBot {
  private readonly api: BotApi;
  /** what a command from each chat may read about (chats not in `chats` are ignored before) */
  private readonly places: (chat: string) => Place;
  private readonly abort = new AbortController();
  private polling: Promise<void> | null = null;
  private refused: (err: Error) => void = () => {};
  /** settles when Telegram refuses the token */
  readonly failure = new Promise<Error>((done) => (this.refused = done));

  constructor(
    private readonly s: TelegramSettings,
    private readonly ctx: PlatformContext,
  ) {
    this.api = new BotApi(s.apiUrl, s.token);
    this.places = commandPlaces({ routes: s.routes }, s.fallback);
  }

  targets(): Target[] {
    return this.s.chats.map((chat) => ({
      name: `telegram:${chat}`,
      deliver: (n, key, runId, urgency) => this.deliver(chat, n, key, runId, urgency),
      edits: true,
      quiet: quietOf(this.s, chat),
    }));
  }

  /** Checks the token, then polls for commands in the background. */
  start(): void {
    void warmCardCharts();
    this.polling = (async () => {
      try {
        const me = await this.api.call<{ username?: string }>('getMe', {}, { signal: this.abort.signal });
        this.ctx.log.info(`telegram: connected as @${me.username ?? '?'}; alerts to ${this.s.chats.join(', ')}`);
      } catch (err) {
        if (this.abort.signal.aborted) return;
        if (err instanceof DeliveryError && err.permanent) {
          return this.refused(new UserError(`Telegram refused the token (${err.message}): check TELEGRAM_BOT_TOKEN`));
        }
        this.ctx.log.warn(`telegram: ${(err as Error).message}; alerts are still sent, commands once it answers`);
      }
      if (this.s.commands) await this.poll();
    })();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.polling;
  }

  private async deliver(chat: string, n: Notification, key: string, runId: number, urgency: number): Promise<void> {
    await deliverCards(
      this.ctx.store.chat,
      `telegram:${chat}`,
      n,
      { key, runId },
      {
        edit: (ref, cards) => this.edit(chat, ref, cards),
        post: async (cards) => {
          const html = pagedHtml(cards, mentionOf(this.s, chat, cards));
          return String((await this.send(chat, html, { reply_markup: keyboard(cards) })).message_id);
        },
        afterPost: (ref, cards) => this.charts(chat, ref, cards, urgency),
        replyResolved: async (ref, cards) =>
          String((await this.send(chat, resolvedHtml(cards), { reply_to_message_id: Number(ref) })).message_id),
      },
    );
  }

  private send(chat: string, html: string, extra: Record<string, unknown> = {}): Promise<TgMessage> {
    const params = {
      chat_id: chat,
      text: html,
      parse_mode: 'HTML',
      link_preview_options: { is_disabled: true },
      ...extra,
    };
    return this.api.call<TgMessage>('sendMessage', params);
  }

  private async edit(chat: string, ref: string, cards: AlertCard[]): Promise<void> {
    try {
      const message = { chat_id: chat, message_id: Number(ref) };
      const text = pagedHtml(cards, mentionOf(this.s, chat, cards));
      await this.api.call('editMessageText', { ...message, text, parse_mode: 'HTML', reply_markup: keyboard(cards) });
    } catch (err) {
      if (!(err instanceof DeliveryError && /message is not modified/.test(err.message))) throw err;
    }
  }

  /** Charts as photos replying to the alert: one that fails is logged, not worth re-posting the alert for. */
  private async charts(chat: string, ref: string, cards: readonly AlertCard[], urgency: number): Promise<void> {
    for (const c of cards) {
      if (!c.chart) continue;
      try {
        const png = await alertChartPng(c.chart, urgency);
        await this.api.sendPhoto(chat, png, {
          reply_to_message_id: ref,
          caption: inert(c.chart.title),
          parse_mode: 'HTML',
        });
      } catch (err) {
        this.ctx.log.warn(`telegram: chart of alert #${c.alertId} not sent: ${(err as Error).message}`);
      }
    }
  }

  private async poll(): Promise<void> {
    let offset = 0;
    let backoff = 1000;
    while (!this.abort.signal.aborted) {
      let updates: TgUpdate[];
      try {
        updates = await this.api.call<TgUpdate[]>(
          'getUpdates',
          { offset, timeout: this.s.pollSeconds, allowed_updates: ['message', 'callback_query'] },
          { timeoutMs: (this.s.pollSeconds + 10) * 1000, signal: this.abort.signal },
        );
        backoff = 1000;
      } catch (err) {
        if (this.abort.signal.aborted) return;
        this.ctx.log.warn(
          `telegram: cannot read commands (${(err as Error).message}): trying again in ${backoff / 1000} s`,
        );
        await sleep(backoff, undefined, { signal: this.abort.signal }).catch(() => {});
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
        continue;
      }
      for (const u of updates) {
        offset = u.update_id + 1;
        await this.onUpdate(u).catch((err: Error) =>
          this.ctx.log.warn(`telegram: update ${u.update_id} failed: ${err.message}`),
        );
      }
    }
  }

  private onUpdate(u: TgUpdate): Promise<void> {
    if (u.message?.text?.startsWith('/')) return this.onCommand(u.message);
    if (u.callback_query) return this.onButton(u.callback_query);
    return Promise.resolve();
  }

  /** The caller as the interaction path sees them: rights from `telegram.allow` (no ids listed: anyone in one of
   * the chats alerts go to, the only ones commands are read from), reading about the runs routed to `chat`. */
  private asker(from: NonNullable<TgMessage['from']>, chat: string): Asker {
    return {
      ...this.places(chat), // refused, or the runs it sees
      store: this.ctx.store,
      log: this.ctx.log,
      user: who(from),
      userName: shownName(from),
      mayWrite: () => this.s.allow.length === 0 || this.s.allow.includes(String(from.id)),
      rightsHint: 'telegram.allow in rlwatch.yaml',
    };
  }

  private async onCommand(m: TgMessage): Promise<void> {
    const chat = String(m.chat.id);
    if (!this.s.chats.includes(chat) || !m.from) return; // a chat rlwatch was not set up for
    const words = m.text!.slice(1).trim().split(/\s+/);
    words[0] = words[0]!.replace(/@\w+$/, ''); // `/status@rlwatch_bot` in groups
    const answer = await interact({ words: commandWords(words) }, this.asker(m.from, chat));
    if (changedSomething(answer)) this.ctx.deliverNow?.();
    if (!answer.ok) return void (await this.send(chat, inert(answer.message), { reply_to_message_id: m.message_id }));
    const sent = await this.send(chat, replyHtml(answer.reply), { reply_to_message_id: m.message_id });
    if (answer.reply.chart) {
      await this.api.sendPhoto(chat, await renderLineChart(answer.reply.chart), {
        reply_to_message_id: String(sent.message_id),
      });
    }
  }

  private async onButton(q: NonNullable<TgUpdate['callback_query']>): Promise<void> {
    const chat = q.message ? String(q.message.chat.id) : '';
    const request = buttonRequest(q.data ?? '');
    if (!request || !this.s.chats.includes(chat)) return;
    const answer = await interact(request, this.asker(q.from, chat));
    await this.api.call('answerCallbackQuery', {
      callback_query_id: q.id,
      text: answer.ok ? answer.reply.title : answer.message,
      show_alert: !answer.ok,
    });
    if (!answer.ok) return;
    // the press changed the alert: its card is captured anew and re-rendered (its chart is a photo of its own);
    // then its other cards (other chats, other platforms) are edited from the outbox
    const ref = String(q.message!.message_id);
    try {
      const cards = await recapture(this.ctx.store, `telegram:${chat}`, ref);
      if (cards) await this.edit(chat, ref, cards);
    } finally {
      this.ctx.deliverNow?.();
    }
  }
}
