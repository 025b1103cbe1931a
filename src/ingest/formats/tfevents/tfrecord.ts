/**
 * TFRecord framing, as TensorFlow's record_writer.cc writes it (and so every `events.out.tfevents.*` file):
 * `uint64 length (LE)`, `uint32 masked CRC32C of those 8 bytes`, `length` bytes of data, `uint32 masked CRC32C
 * of the data`. A frame cut at the end of the bytes waits for the rest.
 */
import CRC32C from 'crc-32/crc32c.js';

const HEADER = 12;
const FOOTER = 4;

/** TensorFlow masks its CRCs so that a CRC of data that itself holds CRCs stays well distributed. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = CRC32C.buf(bytes) >>> 0;
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

export interface Frames {
  /** the data of each complete frame whose CRCs hold, in order */
  records: Buffer[];
  /** bytes of the input fully dealt with: the next read starts here */
  consumed: number;
  /** frames (or spans of bytes) dropped for a CRC mismatch */
  corrupt: number;
  /** the frame at `consumed` claims more than `maxRecordBytes`: its full size, to pass over without reading it */
  tooLong?: number;
}

/** A frame whose length field is trustworthy: its 8 bytes carry a matching CRC. */
function lengthAt(buf: Buffer, at: number): number | undefined {
  const crc = buf.readUInt32LE(at + 8);
  if (maskedCrc32c(buf.subarray(at, at + 8)) !== crc) return undefined;
  // two 32-bit halves: cheaper than a BigInt per frame; lengths past 2^53 only need to compare as huge
  return buf.readUInt32LE(at + 4) * 0x1_0000_0000 + buf.readUInt32LE(at);
}

/**
 * Splits the bytes of a file into frames, from where the last call stopped. A data CRC mismatch under a good
 * length drops that one frame: its boundaries are known. A length CRC mismatch means the boundaries are lost:
 * the reader moves on byte by byte to the next offset whose 8 length bytes match their CRC (a false match has
 * odds of 2^-32 per offset) and counts the skipped span once. TensorFlow's own reader stops at the first bad
 * frame; a monitor would then miss the rest of the run, so this one resynchronises instead.
 */
export class FrameReader {
  /** inside a span of bad bytes (kept across calls, so that a span is counted once) */
  private resyncing = false;

  constructor(private readonly maxRecordBytes: number) {}

  read(buf: Buffer): Frames {
    const records: Buffer[] = [];
    let at = 0;
    let corrupt = 0;
    while (buf.length - at >= HEADER) {
      const len = lengthAt(buf, at);
      if (len === undefined) {
        if (!this.resyncing) corrupt++;
        this.resyncing = true;
        at++;
        continue;
      }
      this.resyncing = false;
      if (len > this.maxRecordBytes) return { records, consumed: at, corrupt, tooLong: HEADER + len + FOOTER };
      const end = at + HEADER + len + FOOTER;
      if (end > buf.length) break; // cut mid-write: wait for the rest
      const data = buf.subarray(at + HEADER, at + HEADER + len);
      if (maskedCrc32c(data) === buf.readUInt32LE(at + HEADER + len)) records.push(data);
      else corrupt++;
      at = end;
    }
    return { records, consumed: at, corrupt };
  }
}
