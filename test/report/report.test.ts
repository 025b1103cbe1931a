/**
 * The run report on real files read by the real pipeline (ingest, store, engine): its numbers are checked
 * against values the test computes itself, from the log lines (the sample lines of a GRPO training analysis of
 * Qwen2.5-Coder-1.5B on OCaml problems, the demo sample) or from the stored
 * points (the real-log corpus), never against a snapshot of the report.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeEngine } from '../../src/app/start.ts';
import { reportOf, runReport } from '../../src/commands/runReport.ts';
import { ConfigSchema, type Config } from '../../src/config/schema.ts';
import { backfill } from '../../src/ingest/backfill.ts';
import type { RunReport } from '../../src/report/build.ts';
import { SqliteAsyncStore } from '../../src/store/sqlite/sqliteAsync.ts';
import type { Store } from '../../src/store/sqlite/store.ts';
import { pipeline } from '../fixtures/pipeline.ts';
import { learningLine, tempDir } from '../helpers.ts';

/** Reads the files (real Ingestor), then the engine evaluates what was read, as at start-up (unless `alerts` is
 * false: the logging callback sample's 3,000 restarts make the engine take ~30 s on it, a problem reported apart). */
async function ingest(roots: string[], config: Config = ConfigSchema.parse({}), alerts = true): Promise<Store> {
  const { store, ingestor } = pipeline({ ingest: config.ingest });
  await backfill(ingestor, roots, config.watch);
  if (alerts) makeEngine(store, config, { terminal: true }).evaluateBehind();
  return store;
}

/** The numbers of a learning.log line (the OCaml GRPO trainer's), read by a regex of the test's own. */
function parseLine(line: string): Record<string, number> {
  const out: Record<string, number> = {};
  const epoch = /\[Epoch ([\d.]+)\]/.exec(line);
  if (epoch) out.epoch = Number(epoch[1]);
  for (const m of line.matchAll(/(\w+)=(-?[\d.e+-]+)(?:(?:Â)?±([\d.]+))?/g)) {
    out[m[1] as string] = Number(m[2]);
    if (m[3] !== undefined) out[`${m[1]}_std`] = Number(m[3]);
  }
  return out;
}

const ctx = (store: Store) => ({ store: new SqliteAsyncStore(store) });

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const row = (r: RunReport, metric: string) => r.ranges.find((x) => x.metric === metric);

// the training analysis, "Sample Log Metrics (Epoch 0.28-0.29)", verbatim (with the mis-encoded ± of the file)
const ANALYSIS_LINES = [
  '[Epoch 0.28]  loss=-0.0469  grad=0.0838  lr=3.58e-06  reward=0.102Â±0.077  syntax_rew=0.102Â±0.078  entropy=0.155  frac_zero_std=0.00',
  '[Epoch 0.28]  loss=-0.0333  grad=0.0362  lr=3.58e-06  reward=0.066Â±0.072  syntax_rew=0.066Â±0.069  entropy=0.090  frac_zero_std=0.00',
  '[Epoch 0.29]  loss=0.0111   grad=0.0406  lr=3.57e-06  reward=0.115Â±0.065  syntax_rew=0.115Â±0.082  entropy=0.165  frac_zero_std=0.25',
  '[Epoch 0.29]  loss=-0.0210  grad=0.0317  lr=3.57e-06  reward=0.084Â±0.063  syntax_rew=0.084Â±0.075  entropy=0.078  frac_zero_std=0.25',
  '[Epoch 0.29]  loss=-0.0269  grad=0.0286  lr=3.56e-06  reward=0.073Â±0.044  syntax_rew=0.073Â±0.063  entropy=0.103  frac_zero_std=0.50',
  '[Epoch 0.29]  loss=-0.0109  grad=0.0380  lr=3.55e-06  reward=0.113Â±0.066  syntax_rew=0.113Â±0.084  entropy=0.110  frac_zero_std=0.25',
];

/** The run before the analysis' lines: epochs 0.01-0.27, low reward, some groups without spread, warmup lr. */
function leadIn(): string[] {
  return Array.from({ length: 27 }, (_, i) => {
    const e = (i + 1) / 100;
    const reward = 0.05 + (i % 5) * 0.01;
    return (
      `[Epoch ${e.toFixed(2)}]  loss=-0.0${200 + i}  grad=0.0${300 + i * 7}  lr=${(0.13 * (i + 1)).toFixed(2)}e-06  ` +
      `reward=${reward.toFixed(3)}Â±0.060  syntax_rew=${reward.toFixed(3)}Â±0.060  entropy=0.1${10 + i}  ` +
      `frac_zero_std=${i % 3 === 0 ? '0.25' : '0.00'}`
    );
  });
}

describe('run report: the training analysis at epoch 0.28-0.29', () => {
  it("reaches the analysis' verdict (struggling, continue with changes) and its actions", async () => {
    const root = tempDir();
    mkdirSync(join(root, 'ocaml-grpo'));
    writeFileSync(join(root, 'ocaml-grpo', 'learning.log'), `${[...leadIn(), ...ANALYSIS_LINES].join('\n')}\n`);
    const store = await ingest([root]);
    const r = await reportOf(ctx(store), { run: 'ocaml-grpo', since: '0.28' });

    // the window is the analysis' six lines
    const lines = ANALYSIS_LINES.map(parseLine);
    expect(r.window.records).toBe(6);
    expect([r.window.fromEpoch, r.window.toEpoch]).toEqual([0.28, 0.29]);

    // ranges, from the lines: reward 0.066-0.115, frac_zero_std 0-0.50, grad 0.0286-0.0838
    const reward = lines.map((l) => l.reward!);
    expect([row(r, 'reward')!.min, row(r, 'reward')!.max]).toEqual([Math.min(...reward), Math.max(...reward)]);
    expect([row(r, 'frac_zero_std')!.min, row(r, 'frac_zero_std')!.max]).toEqual([0, 0.5]);
    expect(row(r, 'frac_zero_std')!.above).toBe(lines.filter((l) => l.frac_zero_std! > 0.1).length); // 4
    expect(row(r, 'frac_zero_std')!.mark).toBe('bad');
    expect(row(r, 'grad_norm')!.mark).toBe('ok'); // the analysis: ✅ healthy
    const lowEntropy = lines.filter((l) => l.entropy! < 0.1 || l.entropy! > 0.2).length; // 2 of 6
    expect(row(r, 'entropy')!.below + row(r, 'entropy')!.above).toBe(lowEntropy);
    expect(row(r, 'entropy')!.mark).toBe('warn'); // the analysis: ⚠️
    // reward CV per line (std / mean): 0.57-1.09, all above 0.30 (the analysis: "50-70% CV", 🔴)
    const cv = lines.map((l) => l.reward_std! / l.reward!);
    expect(row(r, 'reward_cv')!.median).toBeCloseTo(median(cv), 12);
    expect(row(r, 'reward_cv')!.mark).toBe('bad');
    // every reward below the line to the epoch 0.5 milestone (0.2 * epoch / 0.5): the analysis' "🔴 very low"
    expect(row(r, 'reward')!.below).toBe(lines.filter((l) => l.reward! < (0.2 * l.epoch!) / 0.5).length);
    expect(row(r, 'reward')!.mark).toBe('bad');

    // the verdict: struggling, decided by frac_zero_std (mode collapse); continue, reassess at epoch 0.5 and 1.0
    expect(r.status.level).toBe('struggling');
    expect(r.status.decidedBy).toMatch(/^frac_zero_std: 4 of 6 records/);
    expect(r.stop.verdict).toBe('continue');
    expect(r.stop.why[0]).toMatch(/judged at epoch 1/);
    expect(r.milestones.every((m) => m.state === 'pending')).toBe(true);
    expect(r.findings[0]!.id).toBe('mode_collapse');
    expect(r.config['lr (logged now)']).toBe(`${lines[5]!.lr!.toExponential(2)} at step 33`); // the analysis: ~3.55e-6

    // the analysis' actions, in its order: temperature and generations first, then learning rate and completion length
    const at = (re: RegExp) => r.actions.findIndex((a) => re.test(a));
    expect(at(/temperature/)).toBe(0);
    expect(at(/generations per prompt/)).toBe(1);
    expect(at(/learning rate/)).toBeGreaterThan(1);
    expect(at(/max completion length/)).toBeGreaterThan(1);

    // the reply: the summary in its lines, the full report attached as Markdown
    const reply = await runReport(ctx(store), { run: 'ocaml-grpo', since: '0.28' });
    expect(reply.lines[0]).toMatch(/Struggling/);
    expect(reply.attachment?.name).toBe('ocaml-grpo-report.md');
    expect(reply.attachment?.content).toContain('| frac_zero_std | 0 - 0.5 | 0.25 | < 0.1 | 4/6 | 🔴 |');
    store.close();
  });

  it("says stop at epoch 1.0 when the reward is still below 0.15 (the training analysis' stop criteria)", async () => {
    const root = tempDir();
    mkdirSync(join(root, 'stuck'));
    const lines = Array.from({ length: 110 }, (_, i) => {
      const e = ((i + 1) / 100).toFixed(2);
      return `[Epoch ${e}]  loss=-0.02  grad=0.04  lr=5.00e-06  reward=0.080±0.050  syntax_rew=0.080±0.050  entropy=0.12  frac_zero_std=0.00`;
    });
    writeFileSync(join(root, 'stuck', 'learning.log'), `${lines.join('\n')}\n`);
    const store = await ingest([root]);
    const r = await reportOf(ctx(store), { run: 'stuck' });
    expect(r.stop.verdict).toBe('stop');
    expect(r.status.level).toBe('stop');
    expect(r.status.decidedBy).toMatch(/stop_reward_epoch_1: reward 0.08 at epoch 1/);
    expect(r.milestones.find((m) => m.rule === 'stop_frac_zero_std_epoch_1')?.state).toBe('met');
    store.close();
  });
});

describe('run report on the demo sample (samples/grpo-demo)', () => {
  it('judges the last 50 records as the lines of learning.log say', async () => {
    const store = await ingest([resolve('samples/grpo-demo')]);
    const r = await reportOf(ctx(store), { run: 'grpo-demo' });
    const last = readFileSync('samples/grpo-demo/learning.log', 'utf8').trim().split('\n').slice(-50).map(parseLine);
    expect(r.window).toMatchObject({ fromStep: 251, toStep: 300, records: 50 });
    const frac = last.map((l) => l.frac_zero_std!);
    expect([row(r, 'frac_zero_std')!.min, row(r, 'frac_zero_std')!.max]).toEqual([
      Math.min(...frac),
      Math.max(...frac),
    ]);
    const fracOut = frac.filter((v) => v > 0.1).length;
    expect(row(r, 'frac_zero_std')!.above).toBe(fracOut);
    expect(row(r, 'frac_zero_std')!.mark).toBe(fracOut === 0 ? 'ok' : fracOut * 2 < 50 ? 'warn' : 'bad');
    const ent = last.map((l) => l.entropy!);
    expect(row(r, 'entropy')!.below).toBe(ent.filter((v) => v < 0.1).length);
    const cv = last.map((l) => l.reward_std! / l.reward!);
    expect(row(r, 'reward_cv')!.median).toBeCloseTo(median(cv), 12);
    expect(row(r, 'reward_cv')!.max).toBeCloseTo(Math.max(...cv), 12);
    // milestones as the training analysis defines them: mean of the last 10 rewards at the first line at epoch >= 0.5
    const all = readFileSync('samples/grpo-demo/learning.log', 'utf8').trim().split('\n').map(parseLine);
    const at = all.findIndex((l) => l.epoch! >= 0.5);
    const m = all.slice(at - 9, at + 1).reduce((a, l) => a + l.reward!, 0) / 10;
    const half = r.milestones.find((x) => x.rule === 'milestone_reward_epoch_0.5')!;
    expect(half.actual).toBeCloseTo(m, 12);
    expect(half.state).toBe(m > 0.2 ? 'met' : 'missed');
    // the alerts the replay left: grad_explosion (step 121) is history, not a finding of the last 50 steps
    expect(r.findings.some((f) => f.id === 'grad_explosion')).toBe(false);
    // reward components from the breakdowns: no count (length, syntax_errors) passes for a part of the reward
    expect(r.components.map((c) => c.name)).not.toContain('length');
    for (const c of r.components) expect(c.gap, c.name).toBeCloseTo(c.best - c.mean, 12);
    expect(r.best[0]!.reward).toBeGreaterThanOrEqual(r.worst[0]!.reward);
    store.close();
  });

  it('judges a window of 150,000 records (Math.min(...values) overflowed the stack past ~120,000)', async () => {
    const dir = join(tempDir(), 'runs', 'long');
    mkdirSync(dir, { recursive: true });
    const n = 150_000;
    const frac = (i: number): number => (i % 7) / 10; // 0.0 .. 0.6
    writeFileSync(
      join(dir, 'learning.log'),
      `${Array.from({ length: n }, (_, k) => learningLine(k + 1, { frac: frac(k + 1) })).join('\n')}\n`,
    );
    const store = await ingest([join(dir, '..')], ConfigSchema.parse({}), false);
    const r = await reportOf(ctx(store), { run: 'long', since: '1' });
    expect(r.window.records).toBe(n);
    expect(row(r, 'frac_zero_std')).toMatchObject({ n, min: 0, max: 0.6 });
    store.close();
  }, 60_000);

  it("a config range replaces the preset's (report.ranges) and --since takes a step", async () => {
    const config = ConfigSchema.parse({ report: { ranges: { entropy: { min: 0.05, max: 0.3 } } } });
    const store = await ingest([resolve('samples/grpo-demo')], config);
    const r = await reportOf({ ...ctx(store), config }, { run: 'grpo-demo', since: '200' });
    expect(r.window).toMatchObject({ fromStep: 200, toStep: 300, records: 101 });
    const ent = readFileSync('samples/grpo-demo/learning.log', 'utf8').trim().split('\n').slice(199).map(parseLine);
    expect(row(r, 'entropy')!.below).toBe(ent.filter((l) => l.entropy! < 0.05).length);
    expect(row(r, 'entropy')!.range.source).toBe('config report.ranges');
    await expect(reportOf(ctx(store), { run: 'grpo-demo', since: 'soon' })).rejects.toThrow(/--since takes a step/);
    await expect(reportOf(ctx(store), { run: 'grpo-demo', since: '9.5' })).rejects.toThrow(
      'grpo-demo has no records from 9.5 on',
    );
    store.close();
  });
});

describe('run report: untrusted text stays inert', () => {
  it('a generation that closes the code fence or pings stays inside its block', async () => {
    const root = tempDir();
    mkdirSync(join(root, 'r', 'reward_logs'), { recursive: true });
    writeFileSync(join(root, 'r', 'learning.log'), `${leadIn().slice(0, 5).join('\n')}\n`);
    const evil = 'ok\n```\n# @everyone <@123> **bold**';
    writeFileSync(
      join(root, 'r', 'reward_logs', 'completions.jsonl'),
      `${JSON.stringify({ reward: 0.9, completion: evil })}\n`,
    );
    const store = await ingest([root]);
    const md = (await runReport(ctx(store), { run: 'r' })).attachment!.content;
    const block = md.slice(md.indexOf('**Best**'), md.indexOf('**Worst**'));
    expect(block.split('\n').filter((l) => l === '```')).toHaveLength(2); // one block: opened and closed once
    expect(md).not.toContain('@everyone');
    expect(md).toContain('@\u200beveryone');
    store.close();
  });
});

describe('run report on the logging callback sample (samples/grpo-callback)', () => {
  it('reward components: each logged rewards/<fn> over the window, the largest loss first', async () => {
    const store = await ingest([resolve('samples/grpo-callback')], ConfigSchema.parse({}), false);
    const run = store.runs.byName('grpo-callback')!;
    const r = await reportOf(ctx(store), { run: 'grpo-callback' });
    const steps = store.points.steps(run.id).slice(-50);
    const fns = store.points.metricsOf(run.id).filter((m) => /^rewards\/[^/]+$/.test(m));
    expect(fns.length).toBeGreaterThan(1);
    const logged = r.components.filter((c) => c.source === 'metric');
    expect(logged.map((c) => c.name).sort()).toEqual([...fns].sort());
    for (const c of logged) {
      const v = store.points
        .series(run.id, c.name)
        .filter((p) => p.step >= steps[0]!)
        .map((p) => p.value);
      expect(c.mean, c.name).toBeCloseTo(v.reduce((a, b) => a + b, 0) / v.length, 12);
      expect(c.best, c.name).toBe(Math.max(...v));
    }
    const gaps = r.components.map((c) => c.gap);
    expect(gaps).toEqual([...gaps].sort((a, b) => b - a));
    // the callback prints `Total optimization steps = 400`: the total and the epoch are in the progress
    expect(r.progress.totalSteps).toBe(400);
    store.close();
  }, 60_000);
});

const CORPUS = resolve(process.cwd(), '../shared/real-logs');

describe('run report on the real-log corpus', () => {
  it.each(['trl-grpo-tf5-gsm8k', 'verl-ppo-gsm8k-dstack', 'verl-dapo-gui-cursor'])(
    '%s: ranges, CV and baseline from its own points',
    async (name) => {
      const store = await ingest([join(CORPUS, name)]);
      const run = store.runs.list()[0]!;
      const r = await reportOf(ctx(store), { run: run.name });
      const steps = store.points.steps(run.id).slice(-50);
      const inW = (metric: string) =>
        store.points.series(run.id, metric).filter((p) => p.step >= steps[0]! && Number.isFinite(p.value));
      expect(r.ranges.length).toBeGreaterThan(0);
      for (const x of r.ranges) {
        if (x.metric === 'reward_cv') {
          const std = new Map(inW('reward_std').map((p) => [p.step, p.value]));
          const cv = inW('reward')
            .filter((p) => std.has(p.step) && p.value !== 0)
            .map((p) => std.get(p.step)! / Math.abs(p.value));
          expect(x.median).toBeCloseTo(median(cv), 12);
          continue;
        }
        const v = inW(x.metric).map((p) => p.value);
        expect([x.min, x.max], x.metric).toEqual([Math.min(...v), Math.max(...v)]);
        if (x.range.basis === 'absolute') {
          expect(x.below, x.metric).toBe(v.filter((y) => x.range.min !== undefined && y < x.range.min).length);
          expect(x.above, x.metric).toBe(v.filter((y) => x.range.max !== undefined && y > x.range.max).length);
        }
        if (x.range.basis === 'baseline' && x.baseline !== undefined) {
          const early = store.points
            .series(run.id, x.metric)
            .slice(0, 20)
            .map((p) => p.value)
            .filter(Number.isFinite);
          expect(x.baseline).toBeCloseTo(median(early), 12);
        }
      }
      // entropy and grad norm: the training analysis' absolute range unless the run's own start lies outside it
      for (const metric of ['entropy', 'grad_norm']) {
        const x = r.ranges.find((y) => y.metric === metric);
        const early = store.points
          .series(run.id, metric)
          .slice(0, 20)
          .map((p) => p.value)
          .filter(Number.isFinite);
        if (!x || early.length < 5) continue;
        const inside = metric === 'entropy' ? [0.1, 0.2] : [0.01, 0.5];
        const m = median(early);
        expect(x.range.basis, `${name} ${metric}`).toBe(m >= inside[0]! && m <= inside[1]! ? 'absolute' : 'baseline');
      }
      // a milestone on a metric the run never logs waits for nothing
      for (const m of r.milestones) {
        if (!store.points.metricsOf(run.id).includes(m.metric)) expect(m.state).toBe('unlogged');
      }
      expect(['healthy', 'watch', 'struggling', 'stop']).toContain(r.status.level);
      expect(r.status.decidedBy.length).toBeGreaterThan(0);
      store.close();
    },
    120_000,
  );
});
