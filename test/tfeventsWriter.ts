/** A small TensorBoard event writer for the tests and the benchmark: protobufjs encoding plus TFRecord framing. */
import { EVENT } from '../src/ingest/formats/tfevents/tfEventsDecoder.ts';
import { maskedCrc32c } from '../src/ingest/formats/tfevents/tfrecord.ts';

export interface ScalarEvent {
  step: number;
  /** tag -> value, as `SummaryWriter.add_scalar` writes them (`simple_value`) */
  scalars?: Record<string, number>;
  /** tag -> value, as TF2's `tf.summary.scalar` writes them (a one-element float tensor) */
  tensors?: Record<string, number>;
  wallTime?: number;
}

/** One frame around `data`: uint64 length, masked CRC of it, the data, masked CRC of the data. */
export function frame(data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length + 4);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc32c(out.subarray(0, 8)), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}

/** The first record of every event file. */
export function versionRecord(wallTime = 1_700_000_000): Buffer {
  return frame(EVENT.encode(EVENT.create({ wallTime, fileVersion: 'brain.Event:2' })).finish());
}

export function eventRecord(e: ScalarEvent): Buffer {
  const value = [
    ...Object.entries(e.scalars ?? {}).map(([tag, simpleValue]) => ({ tag, simpleValue })),
    ...Object.entries(e.tensors ?? {}).map(([tag, v]) => ({ tag, tensor: { dtype: 1, floatVal: [v] } })),
  ];
  const msg = EVENT.create({ wallTime: e.wallTime ?? 1_700_000_000 + e.step, step: e.step, summary: { value } });
  return frame(EVENT.encode(msg).finish());
}

/** One event per tag and step, as the HF Trainer's TensorBoard callback writes them. */
export function trainerEvents(steps: number, scalars: (step: number) => Record<string, number>): Buffer {
  const parts = [versionRecord()];
  for (let step = 1; step <= steps; step++) {
    for (const [tag, v] of Object.entries(scalars(step))) parts.push(eventRecord({ step, scalars: { [tag]: v } }));
  }
  return Buffer.concat(parts);
}
