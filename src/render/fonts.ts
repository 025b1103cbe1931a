/**
 * The fonts resvg loads to draw a chart. Told to load the system's fonts, it parses every font file on the machine
 * on every render (resvg-js keeps no font database between renders). A chart's text is DejaVu Sans, regular and
 * bold: when both faces have a glyph for every character of the SVG, loading just those two files draws the same
 * picture (no character falls back to another font). Other text (CJK, emoji in a run's name), or a machine without
 * DejaVu Sans, gets the system's fonts as before: text a font lacks is missing, never an error.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';

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
  '/usr/share/fonts', '/usr/local/share/fonts', join(homedir(), '.fonts'), join(homedir(), '.local/share/fonts'),
  '/Library/Fonts', join(homedir(), 'Library/Fonts'),
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
  try {
    const [regular, bold] = files.map((f) => bmpCoverage(readFileSync(f))) as [Uint8Array, Uint8Array];
    for (let c = 0; c < regular.length; c++) regular[c]! &= bold[c]!;
    return { files, covered: regular };
  } catch {
    return null; // not a font this reader understands: the system's fonts, as before
  }
}

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

/** The fonts for one SVG: the DejaVu files when they draw all its characters, else the system's. */
export function fontsFor(svg: string, dejaVu: DejaVu | null): FontSource {
  // vega escapes text with named entities only; a numeric one could name any character
  if (dejaVu === null || svg.includes('&#')) return SYSTEM_FONTS;
  const { covered } = dejaVu;
  for (let i = 0; i < svg.length; i++) {
    const c = svg.charCodeAt(i);
    // a surrogate (outside the BMP) is never covered; tabs and newlines are the markup's white space
    if (covered[c] !== 1 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return SYSTEM_FONTS;
  }
  return { loadSystemFonts: false, fontFiles: dejaVu.files };
}

let found: DejaVu | null | undefined;

/** {@link fontsFor} with DejaVu Sans looked for once per process, at the first chart. */
export function chartFonts(svg: string): FontSource {
  if (found === undefined) found = findDejaVu();
  return fontsFor(svg, found);
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
