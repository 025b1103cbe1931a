import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Reply } from '../../src/render/reply.ts';
import { loadConfig } from '../../src/app/loadConfig.ts';
import { ConfigSchema } from '../../src/config/schema.ts';
import type { Notification } from '../../src/engine/notification.ts';
import type { Target } from '../../src/notify/dispatcher.ts';
import { makeRedactor, redactingTarget, redactorOf } from '../../src/notify/redact.ts';
import { realLogsDir, tempDir } from '../helpers.ts';

const r = makeRedactor();

// shaped like the real thing, made up here
const HF = 'hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890';
const WANDB = '9f8e7d6c5b4a39281706f5e4d3c2b1a098765432';
const OPENAI = 'sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE12';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
const KEY_BODY = [
  'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj',
  'MqEJ5bD3zP1hB3Jm2kX8yS4vQ0pW7rT1uN6oL9iE2aF5gH8jK3lM4nO7pQ0rS1tU',
  'AgMBAAE=',
];

describe('the built-in shapes', () => {
  it.each([
    ['bare Hugging Face token', `loading with ${HF} now`, 'loading with [redacted] now'],
    ['OpenAI project key', `client = OpenAI(${OPENAI})`, 'client = OpenAI([redacted])'],
    ['OpenAI key', 'sk-1234567890abcdefghijklmnop', '[redacted]'],
    ['Slack bot token', 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx', '[redacted]'],
    ['Slack app token', 'xapp-1-A0123456789-1234567890123-abcdef0123456789', '[redacted]'],
    [
      'GitHub token',
      'git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x/y',
      'git clone https://[redacted]@github.com/x/y',
    ],
    ['GitHub fine-grained token', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz', '[redacted]'],
    ['AWS access key id', 'id AKIAIOSFODNN7EXAMPLE, session ASIAIOSFODNN7EXAMPLE', 'id [redacted], session [redacted]'],
    [
      'AWS secret after its name, space-separated',
      `--aws-secret-access-key ${AWS_SECRET} --region x`,
      '--aws-secret-access-key [redacted] --region x',
    ],
    ['Google API key', 'AIzaSyA1234567890abcdefghijklmnopqrstuv', '[redacted]'],
    ['JWT', `token ${JWT} expired`, 'token [redacted] expired'],
    [
      'Bearer header',
      'curl -H "Authorization: Bearer abcdef123456789" https://x',
      'curl -H "Authorization: [redacted]" https://x',
    ],
    ['Bearer alone', 'sent Bearer abcdef123456789', 'sent Bearer [redacted]'],
    ['Authorization with a scheme', 'Authorization: Basic dXNlcjpwYXNzd29yZA==', 'Authorization: [redacted]'],
    [
      'URL password',
      'connecting to postgres://bob:hunter2@db.example:5432/x',
      'connecting to postgres://bob:[redacted]@db.example:5432/x',
    ],
    ['env line', `WANDB_API_KEY=${WANDB}`, 'WANDB_API_KEY=[redacted]'],
    ['env line, bare token value', `HF_TOKEN=${HF}`, 'HF_TOKEN=[redacted]'],
    ['YAML-style', 'db_password: s3cr3t-Pa55', 'db_password: [redacted]'],
    ['numeric password', 'password=123456', 'password=[redacted]'],
    ['camelCase', 'apiKey = "abc-def-ghi"', 'apiKey = "[redacted]"'],
    ['flag', '--hub_token=abcdef', '--hub_token=[redacted]'],
    [
      'flags with their values after a space',
      "python train.py --hub_token abc123 --lr 1e-5 --db-password 'p w' --max_tokens 512 --use_auth_token True",
      "python train.py --hub_token [redacted] --lr 1e-5 --db-password '[redacted]' --max_tokens 512 --use_auth_token True",
    ],
    [
      'a query parameter of a URL',
      'GET https://api.example.com/v1/x?api_key=abc123&page=2',
      'GET https://api.example.com/v1/x?api_key=[redacted]&page=2',
    ],
    ['a bare value longer than the match, all of it', `secret=${'x1'.repeat(400)} next`, 'secret=[redacted] next'],
    [
      'JSON escaped inside a line',
      '{"msg": "{\\"api_key\\": \\"abc123\\"}"}',
      '{"msg": "{\\"api_key\\": \\"[redacted]\\"}"}',
    ],
    [
      'Python dict of the environment',
      `os.environ={'OPENAI_API_KEY': '${OPENAI}', 'AWS_SECRET_ACCESS_KEY': '${AWS_SECRET}', 'HOME': '/root'}`,
      "os.environ={'OPENAI_API_KEY': '[redacted]', 'AWS_SECRET_ACCESS_KEY': '[redacted]', 'HOME': '/root'}",
    ],
    ['JSON', '{"client_secret": "abc123", "name": "x"}', '{"client_secret": "[redacted]", "name": "x"}'],
  ])('%s', (_what, input, expected) => {
    expect(r.text(input)).toBe(expected);
  });

  it('a PEM private key: the markers kept, the body one [redacted] line, the lines around it untouched', () => {
    const key = [
      'step 3 done',
      '-----BEGIN RSA PRIVATE KEY-----',
      ...KEY_BODY,
      '-----END RSA PRIVATE KEY-----',
      'Traceback',
    ];
    expect(r.lines(key)).toEqual([
      'step 3 done',
      '-----BEGIN RSA PRIVATE KEY-----',
      '[redacted]',
      '-----END RSA PRIVATE KEY-----',
      'Traceback',
    ]);
    expect(r.text(key.join('\n'))).toBe(r.lines(key).join('\n'));
  });

  it('a PEM key cut at either end (an evidence block starts where it was cut; a tail ends anywhere)', () => {
    expect(r.lines([KEY_BODY[1]!, KEY_BODY[2]!, '-----END PRIVATE KEY-----', 'RuntimeError'])).toEqual([
      '[redacted]',
      '-----END PRIVATE KEY-----',
      'RuntimeError',
    ]);
    expect(r.lines(['x', '-----BEGIN PRIVATE KEY-----', KEY_BODY[0]!])).toEqual([
      'x',
      '-----BEGIN PRIVATE KEY-----',
      '[redacted]',
    ]);
    expect(r.lines(['before', '-----BEGIN PRIVATE KEY-----', KEY_BODY[0]!, 'loss=0.5 after'])).toEqual([
      'before',
      '-----BEGIN PRIVATE KEY-----',
      '[redacted]',
      'loss=0.5 after',
    ]);
    // cut at both ends: a long mixed-case base64 line alone
    expect(r.lines(['a', KEY_BODY[0]!, 'b'])).toEqual(['a', '[redacted]', 'b']);
  });

  it('a PEM key printed on one line with \\n escapes (a Python repr)', () => {
    const repr = `{'private_key': '-----BEGIN PRIVATE KEY-----\\n${KEY_BODY[0]}\\n-----END PRIVATE KEY-----\\n', 'type': 'x'}`;
    const out = r.text(repr);
    expect(out).not.toContain(KEY_BODY[0]);
    expect(out).toContain("'type': 'x'");
  });
});

describe('what is not a secret', () => {
  it.each([
    'max_tokens=512 num_tokens: 1234 total_num_tokens:59826.000',
    "{'max_num_batched_tokens': 1024, 'pad_token_id': 151643, 'eos_token_id': 151645, 'bos_token_id': None}",
    "tokenizer: Qwen2TokenizerFast(name_or_path='Qwen/Qwen2.5-7B', special_tokens={'eos_token': '<|im_end|>', 'pad_token': '<|endoftext|>'})",
    "{'prompt_key': 'prompt', 'reward_fn_key': 'data_source', 'num_key_value_heads': 2, 'ppo_max_token_len_per_gpu': 16384}",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell variable as a training log prints it
    'TOKENIZERS_PARALLELISM=false use_auth_token: True hub_token=<HUB_TOKEN> HF_TOKEN=${HF_TOKEN}',
    'tokenizer_path: /models/Qwen2.5 hf_token_path: ~/.cache/huggingface/token auth_url: https://auth.example',
    '[Epoch 0.28]  loss=-0.0469  grad=0.0838  lr=3.58e-06  reward=0.102±0.077  entropy=0.155',
    '(TaskRunner pid=1) step:34 - actor/entropy:0.22 - critic/score/mean:0.5 - actor/lr:1e-06',
    // a commit hash in ordinary text is an id, not a key: 40 hex only counts after a secret's name
    'checked out 3f2a9c1d0b8e7f6a5d4c3b2a1f0e9d8c7b6a5f4e (HEAD -> main)',
    'sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
    'the bearer of news; basic usage: see https://example.com/path',
    'run name sk-learn-baseline-with-long-suffix (no digit: not a key)',
  ])('%s', (line) => {
    expect(r.text(line)).toBe(line);
  });

  it('every line of the real training logs passes unchanged, read line by line and as whole files', () => {
    const walk = (d: string): string[] =>
      readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
    const files = walk(realLogsDir());
    expect(files.length).toBeGreaterThan(10);
    const changed: string[] = [];
    let lines = 0;
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const line of text.split(/\r\n|\n|\r/)) {
        lines++;
        if (r.text(line) !== line) changed.push(`${f}: ${line.slice(0, 200)}`);
      }
      if (r.text(text) !== text) changed.push(`${f} (whole)`);
    }
    expect(lines).toBeGreaterThan(10_000);
    expect(changed).toEqual([]);
  });
});

describe('patterns from the config', () => {
  it('redact.patterns are redacted beside the built-in shapes, and the redactor is built once per config', () => {
    const config = ConfigSchema.parse({ redact: { patterns: ['INTERNAL-[A-Z]{8}', '(?<=license=)\\w+'] } });
    const redactor = redactorOf(config);
    expect(redactorOf(config)).toBe(redactor);
    expect(redactor.text(`INTERNAL-ABCDEFGH license=xyz42 ${HF}`)).toBe('[redacted] license=[redacted] [redacted]');
    // without the config, the built-in shapes only
    expect(redactorOf(undefined).text('INTERNAL-ABCDEFGH')).toBe('INTERNAL-ABCDEFGH');
  });

  it('a bad pattern is named by its place in the file; redaction cannot be turned off', async () => {
    const path = join(tempDir(), 'rlwatch.yaml');
    writeFileSync(path, "redact:\n  patterns: ['ok-[0-9]+', 'broken(']\n");
    await expect(loadConfig(path, {})).rejects.toThrow(
      new RegExp(`^${path}: redact\\.patterns\\.1: not a regular expression`),
    );
    writeFileSync(path, "redact:\n  patterns: ['x*']\n");
    await expect(loadConfig(path, {})).rejects.toThrow(/redact\.patterns\.0: matches the empty text/);
    writeFileSync(path, 'redact:\n  enabled: false\n');
    await expect(loadConfig(path, {})).rejects.toThrow(/redact: unknown field 'enabled'/);
  });
});

describe('notifications and replies', () => {
  const n: Notification = {
    run: 'grpo',
    items: [
      {
        alertId: 1,
        kind: 'firing',
        severity: 'critical',
        rule: 'run_crashed',
        metric: 'log:crash',
        step: 3,
        epoch: null,
        summary: `ValueError: bad token ${HF}`,
        recent: [1, 2],
        examples: {
          step: 3,
          best: [{ reward: 1, breakdown: { fmt: 1 }, completion: `print("${OPENAI}")` }],
          worst: [],
        },
        evidence: {
          title: 'the log up to the error',
          lines: [
            `WANDB_API_KEY=${WANDB}`,
            '-----BEGIN PRIVATE KEY-----',
            ...KEY_BODY,
            '-----END PRIVATE KEY-----',
            'torch.OutOfMemoryError: CUDA out of memory.',
          ],
        },
      },
    ],
    report: { kind: 'digest', title: 'digest', lines: [`grpo: HF_TOKEN=${HF}`] },
  };

  it('every text of a notification is redacted; what names and routes it is kept', () => {
    const out = r.notification(n);
    const text = JSON.stringify(out);
    for (const s of [HF, OPENAI, WANDB, ...KEY_BODY]) expect(text).not.toContain(s);
    const item = out.items[0]!;
    expect(item.evidence?.lines).toEqual([
      'WANDB_API_KEY=[redacted]',
      '-----BEGIN PRIVATE KEY-----',
      '[redacted]',
      '-----END PRIVATE KEY-----',
      'torch.OutOfMemoryError: CUDA out of memory.',
    ]);
    expect(item.summary).toBe('ValueError: bad token [redacted]');
    expect(item.examples?.best[0]).toEqual({ reward: 1, breakdown: { fmt: 1 }, completion: 'print("[redacted]")' });
    expect(out.report?.lines).toEqual(['grpo: HF_TOKEN=[redacted]']);
    expect({ ...item, summary: '', evidence: undefined, examples: null }).toEqual({
      ...n.items[0],
      summary: '',
      evidence: undefined,
      examples: null,
    });
    expect(JSON.stringify(n)).toContain(HF); // the given notification is left as it was
  });

  it('a target is given the redacted notification, under its own name and editing as it did', async () => {
    const got: Notification[] = [];
    const target: Target = { name: 'discord:1', edits: true, deliver: async (x) => void got.push(x) };
    const wrapped = redactingTarget(target, r);
    expect(wrapped).toMatchObject({ name: 'discord:1', edits: true });
    await wrapped.deliver(n, 'k', 1, 0);
    expect(JSON.stringify(got)).not.toContain(HF);
  });

  it('a reply: text, fields, blocks, attachment and data, the data still read only when asked for', async () => {
    let reads = 0;
    const reply: Reply = {
      title: `logs of ${HF}`,
      fields: [{ name: 'token', value: HF }],
      lines: [`HF_TOKEN=${HF}`],
      blocks: [
        {
          title: 'train.log',
          code: ['-----BEGIN PRIVATE KEY-----', ...KEY_BODY, '-----END PRIVATE KEY-----'].join('\n'),
          tail: true,
        },
      ],
      attachment: { name: 'report.md', content: `key ${OPENAI}` },
      get data() {
        reads++;
        return Promise.resolve({ run: 'grpo', lines: [`WANDB_API_KEY=${WANDB}`, 'loss=0.5'], n: 3 });
      },
    };
    const out = r.reply(reply);
    expect(reads).toBe(0);
    expect(out.title).toBe('logs of [redacted]');
    expect(out.fields).toEqual([{ name: 'token', value: '[redacted]' }]);
    expect(out.lines).toEqual(['HF_TOKEN=[redacted]']);
    expect(out.blocks?.[0]).toEqual({
      title: 'train.log',
      code: '-----BEGIN PRIVATE KEY-----\n[redacted]\n-----END PRIVATE KEY-----',
      tail: true,
    });
    expect(out.attachment?.content).toBe('key [redacted]');
    expect(await out.data).toEqual({ run: 'grpo', lines: ['WANDB_API_KEY=[redacted]', 'loss=0.5'], n: 3 });
    expect(reads).toBe(1);
  });

  it('data without text to change is handed on as it was, not copied (a long series stays one array)', () => {
    const points = Array.from({ length: 1000 }, (_, i) => ({ step: i, epoch: null, value: i / 10 }));
    const data = { run: 'grpo', metric: 'reward', points };
    const out = r.reply({ title: 'reward of grpo', fields: [], lines: [], data }).data as typeof data;
    expect(out).toBe(data);
    const named = r.reply({ title: '', fields: [], lines: [], data: { ...data, note: `HF_TOKEN=${HF}` } })
      .data as typeof data;
    expect(named).toEqual({ ...data, note: 'HF_TOKEN=[redacted]' });
    expect(named.points).toBe(points);
  });
});
