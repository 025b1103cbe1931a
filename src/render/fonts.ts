/**
 * The fonts resvg loads to draw a chart. Told to load the system's fonts, it parses every font file on the machine
 * on every render (resvg-js keeps no font database between renders). A chart's text is DejaVu Sans, regular and
 * bold: when both faces have a glyph for every character of the SVG, loading just those two files draws the same
 * picture (no character falls back to another font). Other text (CJK, emoji in a run's name), or a machine without
 * DejaVu Sans, gets the system's fonts as before: text a font lacks is missing, never an error.
 *
 * resvg reads a font file whole for every text element it lays out (its font database keeps paths, not data), and a
 * chart has about 18 (title, axis titles, tick labels): with the two DejaVu files (1.4 MB) that was ~9 ms of the
 * ~45 ms a chart costs. So the bot's chart thread cuts both faces down to the characters charts mostly show
 * (`cutChartFonts`, ~130 KB, ~2 ms a chart). A cut face keeps every glyph its characters may lay out to (harfbuzz's
 * subsetter follows the layout's substitutions), so text made of them alone draws the same pixels; other text gets
 * the whole faces. The cut is made once per machine, in the user's cache.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { threadId } from 'node:worker_threads';

/** resvg's `font` options that say where fonts come from. */
export interface FontSource {
  loadSystemFonts: boolean;
  fontFiles?: string[];
}

export const SYSTEM_FONTS: FontSource = { loadSystemFonts: true };

/** The two faces charts use (vega writes `font-weight="bold"` for titles and labels of the rule's lines). */
const FACES = ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf'] as const;

/** Where fontconfig and resvg's font database look on Linux and macOS, in their order. */
export const FONT_DIRS: readonly string[] = [
  '/usr/share/fonts',
  '/usr/local/share/fonts',
  join(homedir(), '.fonts'),
  join(homedir(), '.local/share/fonts'),
  '/Library/Fonts',
  join(homedir(), 'Library/Fonts'),
];

export interface DejaVu {
  files: string[];
  /** 1 where both faces map the BMP code point to a glyph */
  covered: Uint8Array;
}

/** Finds DejaVu Sans and DejaVu Sans Bold under `dirs` and reads which characters both draw; null if either is
 * missing or unreadable. */
export function findDejaVu(dirs: readonly string[] = FONT_DIRS): DejaVu | null {
  const files: string[] = [];
  for (const face of FACES) {
    const file = firstNamed(dirs, face);
    if (file === undefined) return null;
    files.push(file);
  }
  return facesOf(files);
}

/** The two faces in `files` with the characters both draw; null if either is unreadable or no font. */
function facesOf(files: string[]): DejaVu | null {
  try {
    const [regular, bold] = files.map((f) => bmpCoverage(readFileSync(f))) as [Uint8Array, Uint8Array];
    for (let c = 0; c < regular.length; c++) regular[c]! &= bold[c]!;
    return { files, covered: regular };
  } catch {
    return null; // not a font this reader understands: the system's fonts, as before
  }
}

/** What the cut faces keep: Latin (ASCII, Latin-1, Extended-A), Greek, and the punctuation, arrows and signs that
 * numbers and summaries use (d3 writes U+2212 for minus). */
const CUT_KEEPS: ReadonlyArray<readonly [number, number]> = [
  [0x20, 0x7e],
  [0xa0, 0x17f],
  [0x391, 0x3c9],
  [0x2010, 0x2027],
  [0x2030, 0x203a],
  [0x2190, 0x2193],
  [0x2212, 0x2212],
  [0x2248, 0x2248],
  [0x2260, 0x2265],
];

/** Where the cut faces of `whole` are kept: named by the whole files (path, size, time) and what is kept. */
function cutFiles(whole: DejaVu, dir: string): string[] {
  const hash = createHash('sha256').update(JSON.stringify(CUT_KEEPS));
  for (const f of whole.files) {
    const { size, mtimeMs } = statSync(f);
    hash.update(`${f}\0${size}\0${mtimeMs}\0`);
  }
  const folder = join(dir, hash.digest('hex').slice(0, 16));
  return FACES.map((face) => join(folder, face));
}

/** The cut faces of `whole` under `dir`, when made before; else null. */
export function madeCut(whole: DejaVu, dir: string): DejaVu | null {
  try {
    const files = cutFiles(whole, dir);
    return files.every((f) => existsSync(f)) ? facesOf(files) : null;
  } catch {
    return null; // a whole face gone since it was found
  }
}

/** Cuts `whole` down to CUT_KEEPS under `dir` (unless made before) and returns the cut faces. */
export async function makeCut(whole: DejaVu, dir: string): Promise<DejaVu> {
  const made = madeCut(whole, dir);
  if (made) return made;
  const { default: subsetFont } = await import('subset-font');
  const text = CUT_KEEPS.flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, k) => from + k))
    .map((c) => String.fromCharCode(c))
    .join('');
  const files = cutFiles(whole, dir);
  mkdirSync(dirname(files[0]!), { recursive: true });
  for (const [k, file] of files.entries()) {
    const cut = await subsetFont(readFileSync(whole.files[k]!), text, { targetFormat: 'truetype' });
    // written aside, then renamed: a process reading the cache meanwhile sees a whole file or none
    const aside = `${file}.${process.pid}-${threadId}`;
    writeFileSync(aside, cut);
    renameSync(aside, file);
  }
  const cut = facesOf(files);
  if (!cut) throw new Error(`the cut fonts in ${dirname(files[0]!)} cannot be read`);
  return cut;
}

/** The user's cache of cut faces: $XDG_CACHE_HOME/rlwatch/fonts, by default ~/.cache/rlwatch/fonts. */
export const cutFontsDir = (): string =>
  join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'rlwatch', 'fonts');

function firstNamed(dirs: readonly string[], name: string): string | undefined {
  for (const dir of dirs) {
    let entries: string[];
    try {
      entries = readdirSync(dir, { recursive: true, encoding: 'utf8' });
    } catch {
      continue; // no such folder here
    }
    const hit = entries.find((e) => basename(e) === name);
    if (hit !== undefined) return join(dir, hit);
  }
  return undefined;
}

/** The fonts for one SVG: the first of the `choices` (DejaVu faces, cut or whole) that draws all its characters,
 * else the system's. */
export function fontsFor(svg: string, ...choices: Array<DejaVu | null>): FontSource {
  // vega escapes text with named entities only; a numeric one could name any character
  if (svg.includes('&#')) return SYSTEM_FONTS;
  const faces = choices.find((f) => f !== null && drawsAll(svg, f.covered));
  return faces ? { loadSystemFonts: false, fontFiles: faces.files } : SYSTEM_FONTS;
}

function drawsAll(svg: string, covered: Uint8Array): boolean {
  for (let i = 0; i < svg.length; i++) {
    const c = svg.charCodeAt(i);
    // a surrogate (outside the BMP) is never covered; tabs and newlines are the markup's white space
    if (covered[c] !== 1 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  }
  return true;
}

let found: DejaVu | null | undefined;
let cut: DejaVu | null = null;

/** DejaVu Sans looked for once per process, at the first chart, with its cut faces if made before. */
function dejaVu(): DejaVu | null {
  if (found === undefined) {
    found = findDejaVu();
    cut = found && madeCut(found, cutFontsDir());
  }
  return found;
}

/** {@link fontsFor} with this process's DejaVu faces, the cut ones first. */
export function chartFonts(svg: string): FontSource {
  const whole = dejaVu();
  return fontsFor(svg, cut, whole);
}

/** Makes the cut faces for the charts drawn next in this thread (the chart thread, before its first chart). A cache
 * that cannot be written leaves the whole faces in use. */
export async function cutChartFonts(): Promise<void> {
  const whole = dejaVu();
  if (whole && !cut) cut = await makeCut(whole, cutFontsDir()).catch(() => null);
}

/**
 * Which BMP characters a TrueType font maps to a glyph, from its Unicode BMP `cmap` subtable (platform 3, encoding
 * 1, format 4: segments of code points, each mapped by a delta or through a glyph array).
 */
export function bmpCoverage(font: Buffer): Uint8Array {
  const tables = font.readUInt16BE(4);
  let cmap = -1;
  for (let i = 0; i < tables; i++) {
    if (font.toString('latin1', 12 + 16 * i, 16 + 16 * i) === 'cmap') cmap = font.readUInt32BE(12 + 16 * i + 8);
  }
  if (cmap < 0) throw new Error('no cmap table');
  for (let j = 0; j < font.readUInt16BE(cmap + 2); j++) {
    const entry = cmap + 4 + 8 * j;
    const at = cmap + font.readUInt32BE(entry + 4);
    if (font.readUInt16BE(entry) === 3 && font.readUInt16BE(entry + 2) === 1 && font.readUInt16BE(at) === 4) {
      return format4(font, at);
    }
  }
  throw new Error('no Unicode BMP cmap subtable');
}

function format4(font: Buffer, at: number): Uint8Array {
  const segments = font.readUInt16BE(at + 6) / 2;
  const ends = at + 14;
  const starts = ends + 2 * segments + 2; // past the reserved pad
  const deltas = starts + 2 * segments;
  const rangeOffsets = deltas + 2 * segments;
  const covered = new Uint8Array(0x10000);
  for (let s = 0; s < segments; s++) {
    const end = font.readUInt16BE(ends + 2 * s);
    const start = font.readUInt16BE(starts + 2 * s);
    const delta = font.readUInt16BE(deltas + 2 * s);
    const rangeOffset = font.readUInt16BE(rangeOffsets + 2 * s);
    for (let c = start; c <= end && c < 0xffff; c++) {
      // the offset is relative to its own place in the rangeOffsets array
      const index = rangeOffset === 0 ? c : font.readUInt16BE(rangeOffsets + 2 * s + rangeOffset + 2 * (c - start));
      const glyph = rangeOffset !== 0 && index === 0 ? 0 : (index + delta) & 0xffff;
      if (glyph !== 0) covered[c] = 1;
    }
  }
  return covered;
}
