import { simpleParser, type ParsedMail } from 'mailparser';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { email } from '../../src/platforms/email/index.ts';
import { PNG_SIGNATURE } from '../../src/render/chart.ts';
import { HOSTILE, PlatformRun } from './pipeline.ts';

/** A real SMTP server (the smtp-server package) on 127.0.0.1 that requires a login and keeps every mail. */
async function smtp() {
  const mails: Array<{ from: string; to: string[]; mail: ParsedMail }> = [];
  let refuse: { code: number; message: string } | null = null;
  const server = new SMTPServer({
    authOptional: false,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(auth, _session, done) {
      if (auth.username === 'rlwatch' && auth.password === 'pw') done(null, { user: 'rlwatch' });
      else done(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onData(stream, session, done) {
      simpleParser(stream, { keepCidLinks: true }).then((mail) => {
        if (refuse) return done(Object.assign(new Error(refuse.message), { responseCode: refuse.code }));
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          mail,
        });
        done();
      }, done);
    },
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    mails,
    refuseWith: (r: typeof refuse) => (refuse = r),
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

const waitFor = async (ok: () => boolean, ms = 10_000): Promise<void> => {
  for (const end = Date.now() + ms; !ok(); await sleep(20)) if (Date.now() > end) throw new Error('timed out');
};

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

async function setUp(pass = 'pw', section: unknown = {}) {
  const server = await smtp();
  const env = {
    SMTP_HOST: '127.0.0.1',
    SMTP_PORT: String(server.port),
    SMTP_USER: 'rlwatch',
    SMTP_PASS: pass,
    EMAIL_FROM: 'rlwatch <alerts@lab.example>',
    EMAIL_TO: 'ml-team@lab.example',
  };
  const run = await PlatformRun.of(email, section, env);
  open.push(server, run);
  return { server, run };
}

describe('email over SMTP, end to end against a local smtp-server', () => {
  it('a collapse arrives as HTML with the chart inline and a plain-text part; a hostile completion stays text', async () => {
    const { server, run } = await setUp();
    await run.write(30);
    await run.generations([
      { reward: 0.9, completion: HOSTILE },
      { reward: 0.1, completion: 'x = 1' },
    ]);
    await run.write(4, { frac: 1 });
    await waitFor(() => server.mails.length === 1);
    const { from, to, mail } = server.mails[0]!;
    expect(from).toBe('alerts@lab.example');
    expect(to).toEqual(['ml-team@lab.example']);
    expect(mail.subject).toBe('[rlwatch] CRITICAL · mode_collapse firing · grpo');
    expect(mail.references).toBe('<rlwatch-alert-1@lab.example>');
    // the plain-text part: the summary, the fields, the generation verbatim
    expect(mail.text).toContain('frac_zero_std 1 > 0.8');
    expect(mail.text).toContain('Step: 33');
    for (const line of HOSTILE.split('\n')) expect(mail.text).toContain(line);
    // the HTML part: the same, escaped, with the chart inline by its cid
    const html = String(mail.html);
    expect(html).toContain('<h2 style="margin:4px 0">CRITICAL · mode_collapse firing · grpo</h2>');
    const chart = mail.attachments.find((a) => a.contentType === 'image/png')!;
    expect(chart.contentDisposition).toBe('inline');
    expect(chart.content.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(html).toContain(`src="cid:${chart.cid}"`);
    expect(html).toContain(
      '&lt;script&gt;alert(1)&lt;/script&gt; &lt;b&gt;bold&lt;/b&gt; &lt;a href=&quot;https://evil.example&quot;&gt;',
    );
    expect(html).toContain('&lt;/pre&gt;&lt;/code&gt;');
    for (const raw of ['<script', '<b>bold', '<a href', '</pre></code>', '<at ']) expect(html).not.toContain(raw);
    expect(run.rows()).toMatchObject([{ target: 'email:ml-team@lab.example', attempts: 0 }]);

    await run.write(3); // resolved: a second mail, in the same thread
    await waitFor(() => server.mails.length === 2);
    expect(server.mails[1]!.mail.subject).toBe('[rlwatch] CRITICAL · mode_collapse resolved · grpo');
    expect(server.mails[1]!.mail.references).toBe('<rlwatch-alert-1@lab.example>');
    expect(server.mails[1]!.mail.text).toContain('Resolved at step');
  }, 30_000);

  it('a refused login is set aside (it will not heal); a 4xx reply is retried; routes name addresses', async () => {
    const bad = await setUp('wrong');
    await bad.run.write(30);
    await bad.run.write(4, { frac: 1 });
    await waitFor(() => bad.run.rows()[0]?.dead_at != null);
    expect(bad.run.rows()[0]!.dead_reason).toMatch(/^email: .*Invalid username or password/);

    const { server, run } = await setUp('pw', {
      routes: [{ runs: 'grpo', severity: ['critical'], channel: 'pager@lab.example' }],
    });
    server.refuseWith({ code: 451, message: 'try again later' });
    await run.write(30);
    await run.write(4, { frac: 1 });
    await waitFor(() => (run.rows()[0]?.attempts ?? 0) >= 1);
    server.refuseWith(null);
    await waitFor(() => server.mails.length === 1);
    expect(server.mails[0]!.to).toEqual(['pager@lab.example']);
    expect(run.rows()[0]).toMatchObject({ target: 'email:pager@lab.example', dead_at: null });
  }, 30_000);

  it("a run's milestone report arrives as its card: the title as subject, its lines in both parts", async () => {
    const { server, run } = await setUp();
    run.engine.caughtUp(); // watched live: reports are sent for what is reached from here on
    await run.write(55); // learning.log's epoch is the line's number / 100: line 50 reaches epoch 0.5
    expect(await run.reports()).toBe(1);
    // the lines may also have raised an alert, mailed apart
    const report = () => server.mails.find((m) => m.mail.subject?.includes('reached epoch'));
    await waitFor(() => report() !== undefined);
    const { mail } = report()!;
    expect(mail.subject).toMatch(/^\[rlwatch\] grpo reached epoch 0\.5: \S/);
    const text = mail.text ?? '';
    expect(text).toContain('step 50, epoch 0.5'); // as of the step that reached it, not the 55th
    expect(text).toMatch(/^verdict: \w+/m);
    expect(mail.html || '').toContain('step 50, epoch 0.5');
  });

  it('is off without SMTP_HOST; a missing sender or recipient is a config error naming it', () => {
    const parse = (s: unknown) => email.section.parse(s);
    expect(email.settings(parse({}), {})).toBeNull();
    expect(() => email.settings(parse({ host: 'mx' }), {})).toThrow('email.from (or EMAIL_FROM)');
    expect(() => email.settings(parse({ host: 'mx', from: 'a@b' }), {})).toThrow('email.channel (or EMAIL_TO)');
    expect(email.settings(parse({ host: 'mx', from: 'a@b', channel: 'c@d', secure: true }), {})).toMatchObject({
      port: 465,
      to: 'c@d',
      auth: undefined,
    });
  });
});
