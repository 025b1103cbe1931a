/**
 * A read command's answer goes to the caller alone (a `/run report` in the channel is a screen for everyone); a
 * "Post to channel" button on it posts the same answer for everyone. The answer is held here until then: Slack
 * sends back only the button's value, not the private message it was on.
 */
import { randomBytes } from 'node:crypto';
import type { Reply } from '../../render/reply.ts';

/** the action id of the "Post to channel" button; its value is the held answer's token */
export const SHARE_ID = 'share';
/** how long a private answer can still be posted: a reader decides within minutes, and Slack clients drop
 * private answers on a reload anyway */
export const HOLD_MS = 60 * 60_000;
/** answers held at most (a report's Markdown is tens of kB): past it, the oldest can no longer be posted */
const HOLD_MAX = 100;

export interface HeldReply {
  reply: Reply;
  /** who asked: only they see the button */
  user: string;
  /** where they asked: the only channel it is posted to */
  channel: string;
}

export class HeldReplies {
  /** token -> answer and when it is let go; in the order kept, so the oldest come first */
  private readonly held = new Map<string, HeldReply & { until: number }>();

  /** Holds an answer; returns the token the button carries. */
  keep(answer: HeldReply, now = Date.now()): string {
    for (const [token, h] of this.held) {
      if (h.until > now && this.held.size < HOLD_MAX) break;
      this.held.delete(token);
    }
    const token = randomBytes(12).toString('hex');
    this.held.set(token, { ...answer, until: now + HOLD_MS });
    return token;
  }

  /** The answer of a token, if still held. */
  get(token: string, now = Date.now()): HeldReply | undefined {
    const h = this.held.get(token);
    return h && h.until > now ? h : undefined;
  }

  /** Posted: a second click (another of the asker's clients still shows the button) posts nothing more. */
  drop(token: string): void {
    this.held.delete(token);
  }
}

/** What goes with the answer only when it is posted: Slack shows no file in a private answer. */
export function withWhat(reply: Reply): string {
  const parts = [...(reply.chart ? ['its chart'] : []), ...(reply.attachment ? ['the full report'] : [])];
  return parts.length > 0 ? ` with ${parts.join(' and ')}` : '';
}
