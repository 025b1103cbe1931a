import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../scripts/rng.ts';
import { FORMATS } from '../../src/ingest/formats/index.ts';
import { learningLog, pairOf } from '../../src/ingest/formats/learningLog.ts';
import { parseNumber } from '../../src/ingest/metricNames.ts';
import type { LineParser } from '../../src/ingest/records.ts';

const lineParsers = (): Array<[string, LineParser]> =>
  FORMATS.flatMap((f) => (f.kind === 'lines' ? [[f.id, f.open({ relPath: 'x.log' })] as [string, LineParser]] : []));

describe('learning.log pairs', () => {
  it('finds the same pair in a token as the regex it replaces', () => {
    const PAIR = /([A-Za-z_][\w/.-]*)=(\S+)/;
    const alphabet = 'ab_9/.-=:+±x ';
    const rand = mulberry32(9);
    for (let n = 0; n < 20_000; n++) {
      let token = '';
      const len = 1 + Math.floor(rand() * 12);
      for (let i = 0; i < len; i++) token += alphabet[Math.floor(rand() * alphabet.length)];
      token = token.replace(/\s/g, ''); // pairOf sees whitespace-free tokens
      const m = PAIR.exec(token);
      expect(pairOf(token), token).toEqual(m ? [m[1], m[2]] : undefined);
    }
  });

  it('reads a learning.log line unchanged', () => {
    const r = learningLog.open({ relPath: 'learning.log' })(
      '[Epoch 0.28]  loss=-0.0469  grad=0.0838  reward=0.102±0.077',
    );
    expect(r.kind).toBe('metric');
    if (r.kind !== 'metric') return;
    expect(Object.fromEntries(r.record.values)).toEqual({
      epoch: 0.28,
      loss: -0.0469,
      grad_norm: 0.0838,
      reward: 0.102,
      reward_std: 0.077,
    });
  });
});

describe('wrapped numbers', () => {
  it('unwrap as the regex they replace did: np.float64(x), tensor(x, device=...)', () => {
    const WRAPPED = /^(?:(?:np|numpy)\.[a-z]+\d*|(?:torch\.)?tensor)\(\s*([^,()]*?)\s*(?:,.*)?\)$/;
    const reference = (s: string): number | undefined => {
      const m = WRAPPED.exec(s.trim());
      if (!m) return undefined;
      const inner = m[1]!.trim();
      return inner === '' || Number.isNaN(Number(inner)) ? undefined : Number(inner);
    };
    const parts = [
      'np.float64(',
      'tensor(',
      'torch.tensor(',
      'np.int64(',
      ' ',
      '1.5',
      '-2',
      'e-3',
      ',',
      ')',
      '(',
      'x',
      "'",
    ];
    const rand = mulberry32(11);
    for (let n = 0; n < 20_000; n++) {
      let s = parts[Math.floor(rand() * 4)]!;
      for (let k = Math.floor(rand() * 6); k > 0; k--) s += parts[Math.floor(rand() * parts.length)];
      if (rand() < 0.7) s += ')';
      if (!s.startsWith('np.float64(') && !s.includes('tensor(') && !s.startsWith('np.int64(')) continue;
      expect(parseNumber(s), s).toEqual(reference(s));
    }
  });
});

// Speed targets live in the benchmark (bench/worstCase.ts); here a parser that backtracks quadratically
// (a 1 MB line took minutes in learning.log's parser) simply runs into the test's timeout.
describe('every line format on hostile lines', () => {
  const MB = 1 << 20;
  const lines: Record<string, string> = {
    'no separators': 'deadbeef'.repeat(MB / 8),
    'name characters then a space run': `${'a/b.c-d_'.repeat(MB / 16)}${' '.repeat(MB / 2)}x`,
    'epoch tag then spaces': `[Epoch${' '.repeat(MB)}`,
    'leading spaces': `${' '.repeat(MB)}x`,
    'ten thousand fields': Array.from({ length: 10_000 }, (_, i) => `k${i}=${i}`).join(' '),
    'deep JSON': `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`,
    'a wrapped number padded with spaces': `{'loss': np.float64(${' '.repeat(MB / 2)}a${' '.repeat(MB / 2)}b)c, 'x': 1}`,
  };
  for (const [what, line] of Object.entries(lines)) {
    it(`parses a line of ${what} in linear time, without throwing`, () => {
      for (const [, parse] of lineParsers())
        expect(['metric', 'example', 'noise', 'bad', 'event']).toContain(parse(line).kind);
    }, 20_000);
  }
});
