/**
 * The decoder of TensorBoard event files (see tfEvents.ts): protobufjs, loaded only when a run has such a file.
 */
import protobuf from 'protobufjs';
import type { DecodedRecords, ParseResult, RecordDecoder } from '../../records.ts';
import { NOISE, bad, metricResult, setMetric } from '../common.ts';
import { FrameReader } from './tfrecord.ts';

/** The part of tensorflow/core/util/event.proto, summary.proto and tensor.proto that carries scalars. */
const SCHEMA = protobuf.Root.fromJSON({
  nested: {
    Event: {
      fields: {
        wallTime: { type: 'double', id: 1 },
        step: { type: 'int64', id: 2 },
        fileVersion: { type: 'string', id: 3 },
        summary: { type: 'Summary', id: 5 },
      },
    },
    Summary: { fields: { value: { rule: 'repeated', type: 'Value', id: 1 } } },
    Value: {
      oneofs: { value: { oneof: ['simpleValue', 'tensor'] } },
      fields: {
        tag: { type: 'string', id: 1 },
        simpleValue: { type: 'float', id: 2 },
        tensor: { type: 'TensorProto', id: 8 },
      },
    },
    TensorProto: {
      fields: {
        dtype: { type: 'int32', id: 1 },
        tensorContent: { type: 'bytes', id: 4 },
        floatVal: { rule: 'repeated', type: 'float', id: 5, options: { packed: true } },
        doubleVal: { rule: 'repeated', type: 'double', id: 6, options: { packed: true } },
        intVal: { rule: 'repeated', type: 'int32', id: 7, options: { packed: true } },
        int64Val: { rule: 'repeated', type: 'int64', id: 10, options: { packed: true } },
      },
    },
  },
});
export const EVENT = SCHEMA.lookupType('Event');

type Int64 = number | protobuf.Long;
interface TensorMsg {
  dtype: number;
  tensorContent: Uint8Array;
  floatVal: number[];
  doubleVal: number[];
  intVal: number[];
  int64Val: Int64[];
}
interface ValueMsg {
  tag: string;
  value?: 'simpleValue' | 'tensor';
  simpleValue: number;
  tensor?: TensorMsg;
}
interface EventMsg {
  step: Int64;
  summary?: { value: ValueMsg[] };
}

const toNumber = (v: Int64): number => (typeof v === 'number' ? v : protobuf.util.LongBits.from(v).toNumber());

/** tensorflow/core/framework/types.proto */
const DT_FLOAT = 1;
const DT_DOUBLE = 2;
const DT_INT32 = 3;
const DT_INT64 = 9;

/** The value of a one-element numeric tensor; undefined for text, histograms and anything larger. */
function scalarOf(t: TensorMsg): number | undefined {
  const c = t.tensorContent;
  if (c.length > 0) {
    const view = new DataView(c.buffer, c.byteOffset, c.byteLength);
    if (t.dtype === DT_FLOAT && c.length === 4) return view.getFloat32(0, true);
    if (t.dtype === DT_DOUBLE && c.length === 8) return view.getFloat64(0, true);
    if (t.dtype === DT_INT32 && c.length === 4) return view.getInt32(0, true);
    if (t.dtype === DT_INT64 && c.length === 8) return Number(view.getBigInt64(0, true));
    return undefined;
  }
  const one = <T>(a: T[]): T | undefined => (a.length === 1 ? a[0] : undefined);
  if (t.dtype === DT_FLOAT) return one(t.floatVal);
  if (t.dtype === DT_DOUBLE) return one(t.doubleVal);
  if (t.dtype === DT_INT32) return one(t.intVal);
  if (t.dtype === DT_INT64) {
    const v = one(t.int64Val);
    return v === undefined ? undefined : toNumber(v);
  }
  return undefined;
}

function scalarsOf(event: EventMsg): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const v of event.summary?.value ?? []) {
    const value = v.value === 'simpleValue' ? v.simpleValue : v.tensor ? scalarOf(v.tensor) : undefined;
    if (value !== undefined && v.tag !== '') out.push([v.tag, value]);
  }
  return out;
}

/** Decodes frames into events and groups the scalars of one step (a writer logs one event per tag). */
export function decoder(maxRecordBytes: number): RecordDecoder {
  const frames = new FrameReader(maxRecordBytes);
  return (bytes): DecodedRecords => {
    const { records, consumed, corrupt, tooLong } = frames.read(bytes);
    const results: ParseResult[] = [];
    for (let i = 0; i < corrupt; i++) results.push(bad('bad CRC'));
    const bySteps = new Map<number, Map<string, number>>();
    for (const data of records) {
      let event: EventMsg;
      try {
        event = EVENT.decode(data) as unknown as EventMsg;
      } catch {
        results.push(bad('invalid event'));
        continue;
      }
      const scalars = scalarsOf(event);
      if (scalars.length === 0) {
        results.push(NOISE);
        continue;
      }
      const step = toNumber(event.step);
      let values = bySteps.get(step);
      if (!values) bySteps.set(step, (values = new Map()));
      for (const [tag, value] of scalars) setMetric(values, tag, value);
    }
    for (const [step, values] of bySteps) results.push(metricResult(values, step));
    return tooLong === undefined ? { results, consumed } : { results, consumed, tooLong };
  };
}
