import { afterEach, describe, expect, it } from 'vitest';
import { teams } from '../../src/platforms/teams/index.ts';
import { HttpReceiver } from '../fakes/httpReceiver.ts';
import { HOSTILE, PlatformRun } from './pipeline.ts';

type Json = Record<string, any>;

/** What the Workflows trigger "When a Teams webhook request is received" accepts: a message with one Adaptive
 * Card attachment. Answers 202 as Workflows does, or 400 naming the problem. */
function checkShape(body: Json): string | null {
  if (body.type !== 'message') return 'type must be message';
  const a = body.attachments?.[0];
  if (a?.contentType !== 'application/vnd.microsoft.card.adaptive') return 'attachments[0].contentType';
  if (a.content?.type !== 'AdaptiveCard') return 'content.type';
  if (!/^1\.[0-6]$/.test(String(a.content.version))) return 'content.version';
  if (!Array.isArray(a.content.body) || a.content.body.length === 0) return 'content.body';
  return null;
}

/** Every element of the card, depth first. */
function* elements(x: unknown): Generator<Json> {
  if (Array.isArray(x)) for (const y of x) yield* elements(y);
  else if (x && typeof x === 'object') {
    if ('type' in x) yield x as Json;
    for (const v of Object.values(x)) yield* elements(v);
  }
}

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});

describe('Microsoft Teams Workflows webhook, end to end against a local receiver', () => {
  it('posts an Adaptive Card of the collapse; a hostile completion stays a TextRun that nothing reads as markup', async () => {
    const hook = await HttpReceiver.start();
    hook.fallback = (r) => {
      const wrong = checkShape(JSON.parse(r.raw) as Json);
      return wrong ? { status: 400, body: wrong } : { status: 202 };
    };
    const run = await PlatformRun.of(teams, {}, { TEAMS_WEBHOOK_URL: hook.url('/workflows/abc') });
    open.push(hook, run);
    await run.write(30);
    await run.generations([{ reward: 0.9, completion: HOSTILE }]);
    await run.write(4, { frac: 1 });
    await hook.waitFor(() => run.rows()[0]?.done_at != null);
    expect(hook.received).toHaveLength(1);
    const body = hook.json(0);
    expect(checkShape(body)).toBeNull();
    const card = body.attachments[0].content;
    const all = [...elements(card.body)];
    // text only as TextRuns in RichTextBlocks: no TextBlock or FactSet (markdown), no actions, no mentions
    expect(new Set(all.map((e) => e.type))).toEqual(new Set(['RichTextBlock', 'TextRun']));
    expect(card.msteams).toEqual({ width: 'Full' });
    expect(JSON.stringify(body)).not.toContain('"entities"');
    const texts = all.filter((e) => e.type === 'TextRun').map((e) => e.text as string);
    expect(texts[0]).toBe('CRITICAL · mode_collapse firing · grpo');
    expect(texts.some((t) => t.startsWith('frac_zero_std 1 > 0.8'))).toBe(true);
    expect(texts).toContain(HOSTILE);
    expect(texts).toEqual(expect.arrayContaining(['Run: ', 'grpo', 'Step: ', '33']));

    await run.write(3); // resolved: a new card (a webhook cannot edit what it posted)
    await hook.waitFor(() => hook.received.length === 2);
    const resolved = [...elements(hook.json(1).attachments[0].content.body)].find((e) => e.type === 'TextRun')!;
    expect(resolved).toMatchObject({ text: 'CRITICAL · mode_collapse resolved · grpo', color: 'Good' });
  }, 30_000);

  it("a run's milestone report is posted as its card, as of the step that reached the epoch", async () => {
    const hook = await HttpReceiver.start();
    hook.fallback = (r) => {
      const wrong = checkShape(JSON.parse(r.raw) as Json);
      return wrong ? { status: 400, body: wrong } : { status: 202 };
    };
    const run = await PlatformRun.of(teams, {}, { TEAMS_WEBHOOK_URL: hook.url('/workflows/abc') });
    open.push(hook, run);
    run.engine.caughtUp(); // watched live: reports are sent for what is reached from here on
    await run.write(55); // learning.log's epoch is the line's number / 100: line 50 reaches epoch 0.5
    expect(await run.reports()).toBe(1);
    // the lines may also have raised an alert, posted apart
    const at = (): number => hook.received.findIndex((r) => r.raw.includes('reached epoch 0.5'));
    await hook.waitFor(() => at() >= 0);
    const body = hook.json<Json>(at());
    expect(checkShape(body)).toBeNull();
    const texts = [...elements(body)].filter((e) => e.type === 'TextRun').map((e) => e.text as string);
    expect(texts[0]).toMatch(/^grpo reached epoch 0\.5: \S/);
    expect(texts.some((t) => t.includes('step 50, epoch 0.5'))).toBe(true);
  }, 30_000);

  it('a refused card (400) is set aside; routes pick a named Workflows URL', async () => {
    const hook = await HttpReceiver.start();
    hook.answers.push({ status: 400, body: 'bad card' });
    const run = await PlatformRun.of(
      teams,
      { urls: { ml: hook.url('/ml') }, routes: [{ runs: '*', channel: 'ml' }] },
      {},
    );
    open.push(hook, run);
    await run.write(30);
    await run.write(4, { frac: 1 });
    await hook.waitFor(() => run.rows()[0]?.dead_at != null);
    expect(run.rows()[0]).toMatchObject({ target: 'teams:ml', dead_reason: 'teams ml: HTTP 400 bad card' });
    expect(hook.received[0]!.path).toBe('/ml');
  }, 30_000);
});
