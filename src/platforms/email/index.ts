/**
 * Email over SMTP (nodemailer): one mail per outbox row to the row's destination, an address or a
 * comma-separated list. Routes name addresses: `routes: [{ runs: 'prod-*', channel: oncall@example.com }]`.
 */
import * as z from '../../lib/zod.ts';
import { nonEmpty, wholeFrom } from '../../lib/zod.ts';
import { UserError } from '../../lib/errors.ts';
import type { Notification } from '../../engine/notification.ts';
import { DeliveryError } from '../../notify/dispatcher.ts';
import { mentionOf, mentionSchema } from '../../notify/mentions.ts';
import { pagingSection, quietOf } from '../../notify/routing.ts';
import { router, type Platform } from '../platform.ts';

/** One address, nothing a header could be made of around it. */
const address = z
  .string()
  .check(z.regex(/^[^\s@,;<>"]+@[^\s@,;<>"]+$/, { message: 'expected one address such as oncall@example.com' }));

/** Who a paging alert's mail goes to as well (Cc): extra addresses. */
export const EmailMention = mentionSchema({ to: z._default(z.array(address), []) });
export type EmailMention = z.infer<typeof EmailMention>;

const section = z.prefault(
  z.strictObject({
    ...pagingSection(EmailMention),
    /** the SMTP server (else SMTP_HOST) */
    host: z.optional(nonEmpty()),
    /** default 465 when `secure`, else 587 (else SMTP_PORT) */
    port: z.optional(wholeFrom(1, 65535)),
    /** TLS from the first byte (port 465); false: STARTTLS when the server offers it */
    secure: z.optional(z.boolean()),
    /** the login (else SMTP_USER); the password only from SMTP_PASS */
    user: z.optional(nonEmpty()),
    /** the sender (else EMAIL_FROM) */
    from: z.optional(nonEmpty()),
  }),
  {},
);

type Section = z.infer<typeof section>;
export interface EmailSettings {
  section: Section;
  host: string;
  port: number;
  secure: boolean;
  auth: { user: string; pass: string } | undefined;
  from: string;
  /** the default recipients: `email.channel`, else EMAIL_TO */
  to: string | undefined;
}

/** Failures without an SMTP reply that no retry can heal: refused or missing credentials, a bad config. */
const PERMANENT_CODES = new Set(['EAUTH', 'ENOAUTH', 'ECONFIG']);

/** A server's reply says itself whether it will change (nodemailer reads 5xx but 503 as permanent, 4xx not). */
function deliveryError(err: unknown): DeliveryError {
  const e = err as { code?: string; responseCode?: number; permanent?: boolean; message?: string };
  const permanent = PERMANENT_CODES.has(e.code ?? '') || e.permanent === true;
  return new DeliveryError(`email: ${e.message ?? String(err)}`, undefined, permanent);
}

export const email: Platform<Section, EmailSettings> = {
  id: 'email',
  section,
  settings(s, env) {
    const host = s.host ?? (env.SMTP_HOST || undefined);
    if (!host) return null;
    const from = s.from ?? (env.EMAIL_FROM || undefined);
    if (!from) throw new UserError('email.from (or EMAIL_FROM) is needed to send alerts by email');
    const secure = s.secure ?? env.SMTP_SECURE === 'true';
    const port = s.port ?? (env.SMTP_PORT ? Number(env.SMTP_PORT) : secure ? 465 : 587);
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new UserError(`SMTP_PORT: not a port number: '${env.SMTP_PORT}'`);
    const to = s.channel ?? (env.EMAIL_TO || undefined);
    if (!to && s.routes.length === 0)
      throw new UserError('email.channel (or EMAIL_TO) is needed: the address alerts go to');
    const user = s.user ?? (env.SMTP_USER || undefined);
    return {
      section: s,
      host,
      port,
      secure,
      auth: user ? { user, pass: env.SMTP_PASS ?? '' } : undefined,
      from,
      to,
    };
  },
  route: (settings) => router('email', settings.section, settings.to),
  async create(settings) {
    const { createTransport } = await import('nodemailer');
    const timeouts = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 };
    const { host, port, secure, auth } = settings;
    const transport = createTransport({ host, port, secure, auth, ...timeouts });
    const domain = /@([^>\s]+)/.exec(settings.from)?.[1] ?? 'rlwatch';
    const destinations = [
      ...new Set([...(settings.to ? [settings.to] : []), ...settings.section.routes.map((r) => r.channel)]),
    ];
    return {
      targets: destinations.map((to) => ({
        name: `email:${to}`,
        quiet: quietOf(settings.section, to),
        async deliver(n: Notification) {
          // the message builder draws charts (vega, resvg): loaded on the first mail, not with the config
          const { alertMail } = await import('./message.ts');
          const mail = await alertMail(n, domain, (cards) => mentionOf(settings.section, to, cards)?.to ?? []);
          try {
            await transport.sendMail({ from: settings.from, to, ...mail });
          } catch (err) {
            throw deliveryError(err);
          }
        },
      })),
      async stop() {
        transport.close();
      },
    };
  },
};
