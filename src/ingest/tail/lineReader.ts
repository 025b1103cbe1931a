/**
 * Reads the complete lines of a byte range in chunks, leaving a last line without its terminator for the next read
 * and skipping over-long lines without holding them.
 */
import { readSync } from 'node:fs';

/** Complete lines read from a file, and the byte offset just past the last of them. */
export interface LineChunk {
  lines: string[];
  end: number;
  /** lines dropped for exceeding the length cap */
  tooLong: number;
}

const LF = 0x0a;
const CR = 0x0d;
const EMPTY = Buffer.alloc(0);

/** Index just past the last line terminator (`\n`, `\r\n` or tqdm's lone `\r`), or 0 if there is none.
 * A `\r` as the very last byte may be the first half of `\r\n`, so it does not end a line yet, unless `atEnd`
 * says the bytes stop at a line's end. */
function completeEnd(data: Buffer, atEnd: boolean): number {
  let from = data.length - 1;
  if (from >= 0 && data[from] === CR && !atEnd) from--;
  if (from < 0) return 0;
  return Math.max(data.lastIndexOf(LF, from), data.lastIndexOf(CR, from)) + 1;
}

function firstTerminator(data: Buffer): number {
  const lf = data.indexOf(LF);
  const cr = data.indexOf(CR);
  if (lf < 0) return cr;
  if (cr < 0) return lf;
  return Math.min(lf, cr);
}

/**
 * Reads the complete lines of [start, size) in chunks. A last line without its terminator is left for
 * the next read. A line longer than `maxLineBytes` is skipped (and counted) without ever being held in
 * memory whole; while it is being skipped, `end` stays at its start, so a restart rescans it.
 * `lineEnd`: `size` is known to be a line's end (an offset read before), so a `\r` just before it ends a line.
 */
export function* readLines(
  fd: number,
  start: number,
  size: number,
  maxLineBytes: number,
  chunkBytes = 256 * 1024,
  lineEnd = false,
): Generator<LineChunk> {
  // no bigger than what is there to read: live, a read is one appended line, and a buffer of `chunkBytes` per read
  // (outside Node's pool) was 128 MB/s of garbage at 500 reads/s, collected by GCs it forced
  const buf = Buffer.allocUnsafe(Math.max(0, Math.min(chunkBytes, size - start)));
  let readPos = start;
  let pending: Buffer = EMPTY; // bytes of an incomplete line, starting at pendingPos
  let pendingPos = start;
  let skipping = false;
  while (readPos < size) {
    const n = readSync(fd, buf, 0, Math.min(chunkBytes, size - readPos), readPos);
    if (n === 0) break; // the file shrank under us: the next read sees the truncation
    readPos += n;
    let data = pending.length > 0 ? Buffer.concat([pending, buf.subarray(0, n)]) : buf.subarray(0, n);
    let dataPos = pendingPos;
    let tooLong = 0;
    if (skipping) {
      const t = firstTerminator(data);
      if (t < 0) {
        pending = EMPTY;
        pendingPos = dataPos + data.length;
        continue;
      }
      skipping = false;
      tooLong = 1;
      data = data.subarray(t + 1);
      dataPos += t + 1;
    }
    const end = completeEnd(data, lineEnd && readPos === size);
    let lines: string[] = [];
    if (end > 0) {
      lines = data.toString('utf8', 0, end).split(/\r\n|\r|\n/);
      lines.pop(); // the empty string after the last terminator
      if (lines.some((l) => l.length > maxLineBytes)) {
        const kept = lines.filter((l) => l.length <= maxLineBytes);
        tooLong += lines.length - kept.length;
        lines = kept;
      }
    }
    const rest = data.subarray(end);
    if (rest.length > maxLineBytes) {
      skipping = true;
      pending = EMPTY;
      pendingPos = dataPos + data.length;
    } else {
      pending = Buffer.from(rest); // a copy: `buf` is reused by the next read
      pendingPos = dataPos + end;
    }
    if (end > 0 || tooLong > 0) yield { lines, end: dataPos + end, tooLong };
  }
}
