import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { PNG_SIGNATURE } from '../../src/render/chart.ts';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, webhook } from '../../src/platforms/webhook/index.ts';
import type { WebhookBody } from '../../src/platforms/webhook/body.ts';
import { HttpReceiver } from '../fakes/httpReceiver.ts';
import { HOSTILE, PlatformRun } from './pipeline.ts';

const SECRET = 's3cret';

type Headers = Record<string, string | string[] | undefined>;

/** What a receiver does with the headers, as the docs tell it to: the timestamp within 5 minutes of its clock, then
 * the HMAC-SHA256 of `v1:<timestamp>:<raw body>`, hex, compared in constant time. */
function verified(raw: string, headers: Headers, nowSeconds = Date.now() / 1000): boolean {
  const timestamp = Number(headers[TIMESTAMP_HEADER.toLowerCase()]);
  if (!Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > 300) return false;
  const expected = Buffer.from(`v1=${createHmac('sha256', SECRET).update(`v1:${timestamp}:${raw}`).digest('hex')}`);
  const given = Buffer.from(String(headers[SIGNATURE_HEADER.toLowerCase()] ?? ''));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

async function setUp(section: unknown = {}, env: Record<string, string> = {}) {
  const hook = await HttpReceiver.start();
  const run = await PlatformRun.of(webhook, section, { WEBHOOK_URL: hook.url(), WEBHOOK_SECRET: SECRET, ...env });
  open.push(hook, run);
  return { hook, run };
}

describe('generic webhook, end to end against a local receiver', () => {
  it('a collapse is POSTed once, signed, with Alertmanager fields and the generations as data; its resolution too', async () => {
    const { hook, run } = await setUp({ charts: true });
    await run.write(30);
    await run.generations([
      { reward: 0.9, completion: HOSTILE },
      { reward: 0.1, completion: 'x = 1' },
    ]);
    await run.write(4, { frac: 1 }); // frac_zero_std > 0.8 for 3 steps: mode_collapse
    await hook.waitFor(() => hook.received.length === 1);
    const r = hook.received[0]!;
    expect(r.headers['content-type']).toBe('application/json');
    expect(verified(r.raw, r.headers)).toBe(true);
    // a captured body replayed: with its own timestamp it is refused once stale, and a fresh timestamp breaks the HMAC
    const sent = Number(r.headers[TIMESTAMP_HEADER.toLowerCase()]);
    expect(verified(r.raw, r.headers, sent + 301)).toBe(false);
    expect(verified(r.raw, { ...r.headers, [TIMESTAMP_HEADER.toLowerCase()]: String(sent + 301) }, sent + 301)).toBe(
      false,
    );
    const body = hook.json<WebhookBody>(0);
    expect(body).toMatchObject({ version: '4', status: 'firing', groupLabels: { run: 'grpo' }, truncatedAlerts: 0 });
    expect(body.alerts).toHaveLength(1);
    const a = body.alerts[0]!;
    expect(a).toMatchObject({
      status: 'firing',
      labels: { alertname: 'mode_collapse', run: 'grpo', severity: 'critical', metric: 'frac_zero_std' },
      endsAt: '0001-01-01T00:00:00Z',
      kind: 'firing',
      state: 'firing',
      step: 33,
    });
    expect(a.annotations.summary).toMatch(/^frac_zero_std 1 > 0\.8/);
    expect(Date.parse(a.startsAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(a.values.slice(-4)).toEqual([0, 1, 1, 1]);
    // the hostile completion arrives exactly as written: data in a JSON string, never markup
    expect(a.examples.map((e) => e.completion)).toEqual([HOSTILE, 'x = 1']);
    expect(Buffer.from(a.chart!, 'base64').subarray(0, 8)).toEqual(PNG_SIGNATURE);

    await run.write(3); // frac back to 0 for 3 steps: resolved
    await hook.waitFor(() => hook.received.length === 2);
    expect(verified(hook.received[1]!.raw, hook.received[1]!.headers)).toBe(true);
    const resolved = hook.json<WebhookBody>(1);
    expect(resolved.status).toBe('resolved');
    expect(resolved.alerts[0]).toMatchObject({ status: 'resolved', kind: 'resolved', fingerprint: a.fingerprint });
    expect(Date.parse(resolved.alerts[0]!.endsAt)).toBeGreaterThanOrEqual(Date.parse(a.startsAt));
    expect(run.rows().every((row) => row.done_at !== null)).toBe(true);
  }, 30_000);

  it("a run's milestone report is a body of its own kind, never Alertmanager's (no status an Alertmanager receiver reads)", async () => {
    const { hook, run } = await setUp();
    run.engine.caughtUp(); // watched live: reports are sent for what is reached from here on
    await run.write(55); // learning.log's epoch is the line's number / 100: line 50 reaches epoch 0.5
    expect(await run.reports()).toBe(1);
    // the lines may also have raised an alert: its body is Alertmanager's, the report's is not
    const at = (): number => hook.received.findIndex((r) => (JSON.parse(r.raw) as { kind?: string }).kind === 'report');
    await hook.waitFor(() => at() >= 0);
    expect(verified(hook.received[at()]!.raw, hook.received[at()]!.headers)).toBe(true);
    const body = hook.json<Record<string, any>>(at());
    expect(Object.keys(body).sort()).toEqual(['kind', 'receiver', 'report', 'run']);
    expect(body).toMatchObject({ kind: 'report', receiver: 'rlwatch', run: 'grpo', report: { kind: 'milestone' } });
    expect(body.report.title).toMatch(/^grpo reached epoch 0\.5: \S/);
    expect(body.report.lines[1]).toBe('step 50, epoch 0.5');
    expect(body.report.lines.at(-1)).toMatch(/^verdict: \w+/);
  });

  it('without a secret there is no signature header; charts are off by default', async () => {
    const { hook, run } = await setUp({}, { WEBHOOK_SECRET: '' });
    await run.write(30);
    await run.write(4, { frac: 1 });
    await hook.waitFor(() => hook.received.length === 1);
    expect(hook.received[0]!.headers['x-rlwatch-signature']).toBeUndefined();
    expect(hook.received[0]!.headers['x-rlwatch-timestamp']).toBeUndefined();
    expect(hook.json<WebhookBody>(0).alerts[0]!.chart).toBeUndefined();
  });

  it('routes by run glob to a named URL; a route to an unknown destination is a config error naming the field', async () => {
    const oncall = await HttpReceiver.start();
    open.push(oncall);
    const { hook, run } = await setUp({
      urls: { oncall: oncall.url('/pager') },
      routes: [{ runs: 'grp*', channel: 'oncall' }],
    });
    await run.write(30);
    await run.write(4, { frac: 1 });
    await oncall.waitFor(() => oncall.received.length === 1);
    expect(oncall.received[0]!.path).toBe('/pager');
    expect(hook.received).toEqual([]);
    expect(run.rows().map((r) => r.target)).toEqual(['webhook:oncall']);
    expect(() =>
      webhook.settings(webhook.section.parse({ routes: [{ channel: 'pager' }] }), { WEBHOOK_URL: hook.url() }),
    ).toThrow("webhook.routes[0].channel: no destination 'pager'");
    expect(webhook.settings(webhook.section.parse({}), {})).toBeNull();
  });

  it('a 429 waits its Retry-After, a 503 is retried, a 404 is set aside and the next alert still goes out', async () => {
    const { hook, run } = await setUp();
    hook.answers.push({ status: 429, headers: { 'retry-after': '0.2' } }, { status: 503 });
    await run.write(30);
    await run.write(4, { frac: 1 });
    await hook.waitFor(() => run.rows()[0]?.done_at != null);
    expect(hook.received).toHaveLength(3);
    expect(run.rows()[0]).toMatchObject({ attempts: 2, dead_at: null });

    hook.answers.push({ status: 404, body: 'no such hook' });
    await run.write(1, { grad: 15.786 }); // grad_explosion
    await hook.waitFor(() => run.rows().length === 2 && run.rows()[1]!.dead_at !== null);
    expect(run.rows()[1]!.dead_reason).toBe('webhook default: HTTP 404 no such hook');
    await run.write(3); // the collapse resolves: delivered after the dead letter
    await hook.waitFor(() => run.rows().length === 3 && run.rows()[2]!.done_at !== null);
    expect(hook.json<WebhookBody>(hook.received.length - 1).status).toBe('resolved');
  });
});
