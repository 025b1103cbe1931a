/**
 * A job that prints its environment and a private key, then dies of CUDA OOM, watched by the real `start`: what
 * reaches the webhook receiver, the fake Discord and the terminal, and what `run logs` answers (chat, CLI, --json),
 * holds none of the secrets but says where they were; the database keeps the lines as the file held them.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { platformsFromEnv, startApp, type App } from '../../src/app/start.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import { silentLog } from '../../src/lib/log.ts';
import { consoleTarget } from '../../src/platforms/terminal/terminal.ts';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discordServer.ts';
import { HttpReceiver } from '../fakes/httpReceiver.ts';
import { rlwatch } from '../integration/cli.ts';
import { tempDir } from '../helpers.ts';

// shaped like the real thing, made up here
const WANDB = '9f8e7d6c5b4a39281706f5e4d3c2b1a098765432';
const HF = 'hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890';
const OPENAI = 'sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE12';
const KEY_BODY = [
  'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj',
  'MqEJ5bD3zP1hB3Jm2kX8yS4vQ0pW7rT1uN6oL9iE2aF5gH8jK3lM4nO7pQ0rS1tU',
];
/** matched by the config's redact.patterns only */
const INTERNAL = 'INTERNAL-QWERTYUI';
const SECRETS = [WANDB, HF, OPENAI, AWS_SECRET, ...KEY_BODY, INTERNAL];

const OOM =
  'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB. GPU 0 has a total capacity of 79.25 GiB.';
const trlDict = (i: number): string =>
  `{'loss': ${(0.01 * i).toFixed(4)}, 'grad_norm': 0.5, 'learning_rate': 9.8e-07, 'reward': ${(0.3 + i / 100).toFixed(3)}, ` +
  `'reward_std': 0.31, 'frac_reward_zero_std': 0.1, 'entropy': 0.61, 'epoch': ${(i / 50).toFixed(2)}}`;
const crash = [
  `WANDB_API_KEY=${WANDB}`,
  `HF_TOKEN=${HF}`,
  `os.environ={'OPENAI_API_KEY': '${OPENAI}', 'AWS_SECRET_ACCESS_KEY': '${AWS_SECRET}', 'HOME': '/root'}`,
  `license: ${INTERNAL}`,
  '-----BEGIN PRIVATE KEY-----',
  ...KEY_BODY,
  '-----END PRIVATE KEY-----',
  'Traceback (most recent call last):',
  '  File "/workspace/train_grpo.py", line 286, in <module>',
  '    trainer.train()',
  OOM,
];

/** Asserts that `text` shows no secret, and shows where one was along with the OOM line. */
function clean(where: string, text: string): void {
  for (const s of SECRETS) expect(text, `${where} shows ${s}`).not.toContain(s);
  expect(text, where).toContain('[redacted]');
  expect(text, where).toContain('torch.OutOfMemoryError: CUDA out of memory');
}

describe("secrets in a crashing job's log, end to end", () => {
  const root = tempDir('rlw-redact-');
  const runDir = join(root, 'runs', 'grpo');
  const log = join(runDir, 'train.log');
  const db = join(root, 'rlwatch.db');
  let hook: HttpReceiver;
  let discord: FakeDiscord;
  let app: App;
  let terminal = '';

  beforeAll(async () => {
    mkdirSync(runDir, { recursive: true });
    writeFileSync(log, `${Array.from({ length: 5 }, (_, i) => trlDict(i + 1)).join('\n')}\n`);
    writeFileSync(join(root, 'rlwatch.yaml'), `redact:\n  patterns: ['INTERNAL-[A-Z]{8}']\n`);
    hook = await HttpReceiver.start();
    discord = await startFakeDiscord();
    const config = ConfigSchema.parse({ redact: { patterns: ['INTERNAL-[A-Z]{8}'] } });
    const env = {
      WEBHOOK_URL: hook.url(),
      DISCORD_TOKEN: discord.token,
      DISCORD_API_URL: discord.apiUrl,
      DISCORD_GUILD_ID: discord.guildId,
      DISCORD_CHANNEL_ID: discord.channelId,
    };
    app = await startApp({
      config,
      dbPath: db,
      roots: [join(root, 'runs')],
      log: silentLog,
      terminal: consoleTarget((s) => void (terminal += s), false),
      platforms: platformsFromEnv(config, env),
      delivery: { baseBackoffMs: 200, maxBackoffMs: 400 },
    });
    for (let i = 0; i < 500 && ![...app.platforms.values()].every((p) => p.ready?.() ?? true); i++)
      await new Promise((r) => setTimeout(r, 20));
    appendFileSync(log, `${crash.join('\n')}\n`);
    await hook.waitFor(() => hook.received.some((r) => r.raw.includes('run_crashed')), 15_000);
    await discord.waitFor(
      () => discord.channelMessages().find((m) => JSON.stringify(m.embeds).includes('run_crashed')),
      15_000,
    );
    await vi.waitFor(() => expect(terminal).toContain('run_crashed'), { timeout: 15_000, interval: 20 });
  }, 40_000);

  afterAll(async () => {
    await app?.stop();
    await discord?.close();
    await hook?.close();
  }, 20_000);

  it('the webhook body carries the evidence with the secrets redacted, the names and the OOM line kept', () => {
    const raw = hook.received.find((r) => r.raw.includes('run_crashed'))!.raw;
    clean('webhook', raw);
    const evidence = JSON.parse(raw).alerts[0].evidence as { lines: string[] };
    expect(evidence.lines).toEqual(
      expect.arrayContaining([
        'WANDB_API_KEY=[redacted]',
        'HF_TOKEN=[redacted]',
        "os.environ={'OPENAI_API_KEY': '[redacted]', 'AWS_SECRET_ACCESS_KEY': '[redacted]', 'HOME': '/root'}",
        'license: [redacted]',
        '-----BEGIN PRIVATE KEY-----',
        '-----END PRIVATE KEY-----',
        OOM,
      ]),
    );
  });

  it('every request to Discord, and the card it shows, hold none of the secrets', () => {
    clean('discord requests', JSON.stringify(discord.requests.map((r) => r.body)));
    const card = discord.channelMessages().find((m) => JSON.stringify(m.embeds).includes('run_crashed'))!;
    clean('discord card', JSON.stringify(card.embeds));
    expect(JSON.stringify(card.embeds)).toContain('WANDB_API_KEY=[redacted]');
  });

  it('the terminal prints the card redacted', () => {
    clean('terminal', terminal);
    expect(terminal).toContain('│ HF_TOKEN=[redacted]');
  });

  it('/run logs in chat answers the tail redacted', async () => {
    const out = await discord.command({
      name: 'run',
      subcommand: 'logs',
      options: { run: 'grpo' },
      user: { id: '111111111111111111', username: 'ana' },
    });
    await discord.waitFor(() => out.callback !== null || out.edits.length > 0, 10_000);
    const shown = JSON.stringify([out.callback?.data, ...out.edits.map((e) => e.body)]);
    clean('/run logs', shown);
  });

  it('rlwatch run logs, as text and as --json, shows none of them; the database keeps what the file held', () => {
    const cfg = join(root, 'rlwatch.yaml');
    const text = rlwatch(['run', 'logs', 'grpo', '--db', db, '--config', cfg]);
    expect(text.status, text.stderr).toBe(0);
    clean('rlwatch run logs', text.stdout);
    expect(text.stdout).toContain('    -----BEGIN PRIVATE KEY-----\n    [redacted]\n    -----END PRIVATE KEY-----');
    const json = rlwatch(['run', 'logs', 'grpo', '--db', db, '--config', cfg, '--json']);
    expect(json.status, json.stderr).toBe(0);
    clean('rlwatch run logs --json', json.stdout);
    expect((JSON.parse(json.stdout) as { lines: string[] }).lines).toContain('WANDB_API_KEY=[redacted]');
    // not redacted at ingest: the evidence stored with the error event is the file's text
    const stored = app.store.db.prepare("SELECT context FROM events WHERE kind = 'error'").all() as Array<{
      context: string;
    }>;
    expect(stored.map((e) => e.context).join('\n')).toContain(HF);
  });

  it('rlwatch examples --json shows a generation that leaked a key redacted, prompt and completion', async () => {
    const completions = join(runDir, 'reward_logs', 'completions.jsonl');
    mkdirSync(join(runDir, 'reward_logs'), { recursive: true });
    const kept = (reward: number, text: string) =>
      JSON.stringify({ problem_id: 'p0', step: 5, reward, prompt: `Use the key ${OPENAI}`, completion: text });
    writeFileSync(completions, `${kept(0.9, `export HF_TOKEN=${HF}`)}\n${kept(0.1, 'no idea')}\n`);
    const stored = () => (app.store.db.prepare('SELECT count(*) AS n FROM examples').get() as { n: number }).n;
    await vi.waitFor(() => expect(stored()).toBe(2), { timeout: 10_000, interval: 20 });
    const out = rlwatch(['examples', 'grpo', '--step', '5', '--db', db, '--json']);
    expect(out.status, out.stderr).toBe(0);
    for (const s of [OPENAI, HF]) expect(out.stdout).not.toContain(s);
    const shown = JSON.parse(out.stdout) as { examples: Array<{ prompt: string; completion: string }> };
    expect(shown.examples.map((e) => e.completion)).toEqual(['export HF_TOKEN=[redacted]', 'no idea']);
    expect(shown.examples[0]!.prompt).toBe('Use the key [redacted]');
  });
});
