import { describe, expect, it } from 'vitest';
import { decoder, EVENT } from '../../../../src/ingest/formats/tfevents/tfEventsDecoder.ts';
import { FrameReader, maskedCrc32c } from '../../../../src/ingest/formats/tfevents/tfrecord.ts';
import type { MetricRecord, ParseResult } from '../../../../src/ingest/records.ts';
import { eventRecord, frame, versionRecord } from '../../../tfeventsWriter.ts';

/** CRC32C bit by bit (reflected Castagnoli polynomial 0x82F63B78): independent of the package under test. */
function crc32cBitwise(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) {
    crc ^= b;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
const mask = (crc: number): number => ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;

/** A record framed byte by byte as TensorFlow's record_writer.cc does, with the bitwise CRC. */
function tfRecord(data: Buffer): Buffer {
  const len = Buffer.alloc(8);
  len.writeUInt32LE(data.length, 0);
  const crc = (b: Buffer): Buffer => {
    const out = Buffer.alloc(4);
    out.writeUInt32LE(mask(crc32cBitwise(b)), 0);
    return out;
  };
  return Buffer.concat([len, crc(len), data, crc(data)]);
}

const decode = (bytes: Buffer): { results: ParseResult[]; consumed: number } => decoder(1 << 20)(bytes);
const metrics = (results: ParseResult[]): MetricRecord[] =>
  results.flatMap((r) => (r.kind === 'metric' ? [r.record] : []));

describe('TFRecord framing', () => {
  it('masks the CRC32C check value of "123456789" as TensorFlow does', () => {
    expect(crc32cBitwise(Buffer.from('123456789'))).toBe(0xe3069283); // the published check value
    // ((0xE3069283 >>> 15) | (0xE3069283 << 17)) + 0xa282ead8 mod 2^32, worked out by hand
    expect(maskedCrc32c(Buffer.from('123456789'))).toBe(0xc78ab0e5);
    expect(maskedCrc32c(Buffer.from('123456789'))).toBe(mask(0xe3069283));
  });

  it('reads an event file built byte by byte in the TensorBoard format', () => {
    // Event{wall_time=1 (double), file_version="brain.Event:2"}, then Event{wall_time, step=7,
    // summary{value{tag="train/reward", simple_value=0.5}}}: protobuf wire bytes written out by hand
    const wall = Buffer.from([0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]); // field 1, fixed64: 1.0
    const version = Buffer.concat([wall, Buffer.from([0x1a, 13]), Buffer.from('brain.Event:2')]);
    const tag = Buffer.from('train/reward');
    const value = Buffer.concat([Buffer.from([0x0a, tag.length]), tag, Buffer.from([0x15, 0, 0, 0, 0x3f])]); // 0.5f
    const summary = Buffer.concat([Buffer.from([0x0a, value.length]), value]);
    const scalar = Buffer.concat([wall, Buffer.from([0x10, 7, 0x2a, summary.length]), summary]);
    const file = Buffer.concat([tfRecord(version), tfRecord(scalar)]);
    // the test's writer frames identically
    expect(Buffer.concat([frame(version), frame(scalar)]).equals(file)).toBe(true);

    const { results, consumed } = decode(file);
    expect(consumed).toBe(file.length);
    expect(results[0]).toEqual({ kind: 'noise' });
    expect(metrics(results)).toEqual([{ step: 7, values: new Map([['reward', 0.5]]) }]);
  });

  it('leaves a record cut mid-write for the next read', () => {
    const a = eventRecord({ step: 1, scalars: { 'train/loss': 0.25 } });
    const b = eventRecord({ step: 2, scalars: { 'train/loss': 0.125 } });
    for (const cut of [3, 12, 13, b.length - 1]) {
      const { results, consumed } = decode(Buffer.concat([a, b.subarray(0, cut)]));
      expect(consumed).toBe(a.length);
      expect(metrics(results).map((m) => m.step)).toEqual([1]);
    }
  });

  it('drops a record whose data CRC fails and reads on', () => {
    const good = eventRecord({ step: 1, scalars: { 'train/loss': 1 } });
    const broken = eventRecord({ step: 2, scalars: { 'train/loss': 2 } });
    broken.writeUInt8(broken.readUInt8(broken.length - 6) ^ 0xff, broken.length - 6); // a byte of the data
    const after = eventRecord({ step: 3, scalars: { 'train/loss': 3 } });
    const { results, consumed } = decode(Buffer.concat([good, broken, after]));
    expect(consumed).toBe(good.length + broken.length + after.length);
    expect(results.filter((r) => r.kind === 'bad')).toEqual([{ kind: 'bad', reason: 'bad CRC' }]);
    expect(metrics(results).map((m) => m.step)).toEqual([1, 3]);
  });

  it('finds the next record after a damaged length, counting the bad span once', () => {
    const broken = eventRecord({ step: 1, scalars: { 'train/loss': 1 } });
    broken.writeUInt8(broken.readUInt8(0) ^ 0x01, 0); // the length no longer matches its CRC: the frame boundaries are lost
    const next = eventRecord({ step: 2, scalars: { 'train/loss': 2 } });
    const reader = new FrameReader(1 << 20);
    const first = reader.read(Buffer.concat([versionRecord(), broken, next]));
    expect(first.corrupt).toBe(1);
    expect(first.records).toHaveLength(2); // the version record and `next`
  });

  it('reports a record over the size cap instead of holding it', () => {
    const big = frame(Buffer.alloc(5000, 1));
    const out = new FrameReader(1000).read(Buffer.concat([versionRecord(), big.subarray(0, 100)]));
    expect(out.records).toHaveLength(1);
    expect(out.tooLong).toBe(big.length);
  });

  it('reads a zero, which the no-learning rule looks for (a oneof member is written even when 0)', () => {
    const bytes = eventRecord({ step: 3, scalars: { 'train/loss': 0, 'train/grad_norm': 0 } });
    expect(metrics(decode(bytes).results)).toEqual([
      {
        step: 3,
        values: new Map([
          ['loss', 0],
          ['grad_norm', 0],
        ]),
      },
    ]);
  });

  it('passes over text and multi-element tensors as noise, not as bad records', () => {
    const text = { tag: 'args/text_summary', tensor: { dtype: 7, tensorContent: Buffer.from('lr=1e-6') } };
    const histogram = { tag: 'train/logits', tensor: { dtype: 1, floatVal: [1, 2, 3] } };
    const bytes = frame(EVENT.encode(EVENT.create({ step: 1, summary: { value: [text, histogram] } })).finish());
    expect(decode(bytes).results).toEqual([{ kind: 'noise' }]);
  });

  it('reads scalars written as one-element tensors (TF2 summaries)', () => {
    const { results } = decode(eventRecord({ step: 4, tensors: { 'train/rewards/accuracy_reward/mean': 0.75 } }));
    expect(metrics(results)).toEqual([{ step: 4, values: new Map([['rewards/accuracy_reward', 0.75]]) }]);
  });

  it('groups the events of one step into one record, with the epoch', () => {
    const bytes = Buffer.concat([
      eventRecord({ step: 5, scalars: { 'train/reward': 0.5 } }),
      eventRecord({ step: 5, scalars: { 'train/epoch': 0.25 } }),
      eventRecord({ step: 6, scalars: { 'train/reward': 0.625 } }),
    ]);
    expect(metrics(decode(bytes).results)).toEqual([
      {
        step: 5,
        epoch: 0.25,
        values: new Map([
          ['reward', 0.5],
          ['epoch', 0.25],
        ]),
      },
      { step: 6, values: new Map([['reward', 0.625]]) },
    ]);
  });
});
