import { mkdirSync, mkdtempSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PNG_SIGNATURE, svgToPng } from '../../src/render/chart.ts';
import { specToSvg } from '../../src/render/chartShapes.ts';
import { bmpCoverage, findDejaVu, fontsFor, madeCut, makeCut, SYSTEM_FONTS } from '../../src/render/fonts.ts';
import { cases, specOf, type Case } from './chartCases.ts';

/** This machine's DejaVu Sans, if it has it (a fresh CI box may have no fonts at all). */
const dejaVu = findDejaVu();

const wave = (n: number): Array<{ step: number; value: number }> =>
  Array.from({ length: n }, (_, i) => ({ step: i, value: -1 + Math.sin(i / 5) }));

/** Texts beyond ASCII that DejaVu Sans draws in both weights, and negative numbers (d3 writes U+2212 for minus). */
const more: Case[] = [
  {
    name: 'accents, Greek, Cyrillic',
    title: 'Grüße · Ωμέγα · Жизнь · naïve “q” – ok…',
    metric: 'récompense',
    points: wave(80),
    markStep: 30,
    threshold: -1.5,
  },
  { name: 'a CJK run name', title: 'reward · 训练/run1', metric: 'reward', points: wave(40) },
];

describe('the fonts a chart is rasterised with', () => {
  it('draw the same PNG bytes as all the system fonts, for charts of every shape and text', async () => {
    for (const c of [...cases, ...more]) {
      const svg = await specToSvg(specOf(c));
      const width = c.width ?? 800;
      const drawn = await svgToPng(svg, width);
      expect(drawn.equals(await svgToPng(svg, width, SYSTEM_FONTS)), c.name).toBe(true);
    }
  });

  it.skipIf(dejaVu === null)('load only the two DejaVu files unless a character needs a font beyond them', async () => {
    const onSystem: string[] = [];
    for (const c of [...cases, ...more]) {
      const fonts = fontsFor(await specToSvg(specOf(c)), dejaVu);
      if (fonts.loadSystemFonts) onSystem.push(c.name);
      else expect(fonts.fontFiles).toEqual(dejaVu!.files);
    }
    expect(onSystem).toEqual(['text beyond ASCII', 'a CJK run name']);
  });

  it.skipIf(dejaVu === null)("read which characters both faces draw from the fonts' cmap", () => {
    const covered = (ch: string): boolean => dejaVu!.covered[ch.charCodeAt(0)] === 1;
    for (const ch of ['A', '~', ' ', 'é', 'Ω', 'Ж', '·', '\u2212', '…']) expect(covered(ch), ch).toBe(true);
    for (const ch of ['训', '\u0378', '\u0007', '\u007f', '\ud83d']) expect(covered(ch), ch).toBe(false);
  });

  it('go to the system fonts for a numeric character reference or a character outside the BMP', () => {
    const all = new Uint8Array(0x10000).fill(1);
    const everything = { files: ['/a.ttf', '/b.ttf'], covered: all };
    expect(fontsFor('<svg><text>a</text></svg>', everything)).toEqual({
      loadSystemFonts: false,
      fontFiles: everything.files,
    });
    expect(fontsFor('<svg><text>&#x8bad;</text></svg>', everything)).toBe(SYSTEM_FONTS);
    const some = { files: everything.files, covered: new Uint8Array(0x10000).fill(1, 0x20, 0x7f) };
    expect(fontsFor('<svg>\n<text>ok</text></svg>', some).loadSystemFonts).toBe(false);
    expect(fontsFor('<svg><text>😀</text></svg>', some)).toBe(SYSTEM_FONTS);
  });

  it('are the system fonts on a machine without DejaVu Sans, and the PNG still comes out', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'rlwatch-fonts-'));
    expect(findDejaVu([empty, join(empty, 'missing')])).toBeNull();
    const svg = await specToSvg(specOf(cases[0]!));
    const png = await svgToPng(svg, 800, fontsFor(svg, null));
    expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    // a file by that name that is no font: not used
    mkdirSync(join(empty, 'x'));
    writeFileSync(join(empty, 'x', 'DejaVuSans.ttf'), 'not a font');
    writeFileSync(join(empty, 'x', 'DejaVuSans-Bold.ttf'), 'not a font');
    expect(findDejaVu([empty])).toBeNull();
    expect(() => bmpCoverage(Buffer.alloc(64))).toThrow('no cmap table');
  });

  it.skipIf(dejaVu === null)('find both faces anywhere under the folders, the first folder first', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlwatch-fonts-'));
    mkdirSync(join(dir, 'a', 'b'), { recursive: true });
    symlinkSync(dejaVu!.files[0]!, join(dir, 'a', 'b', 'DejaVuSans.ttf'));
    expect(findDejaVu([dir])).toBeNull(); // the bold face is missing
    symlinkSync(dejaVu!.files[1]!, join(dir, 'a', 'DejaVuSans-Bold.ttf'));
    expect(findDejaVu([dir, '/usr/share/fonts'])?.files).toEqual([
      join(dir, 'a', 'b', 'DejaVuSans.ttf'),
      join(dir, 'a', 'DejaVuSans-Bold.ttf'),
    ]);
  });
});

describe('the cut DejaVu faces', () => {
  const withDejaVu = it.skipIf(dejaVu === null);
  withDejaVu('draw the same PNG bytes as the whole faces, for every chart whose text they hold', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlwatch-cut-'));
    expect(madeCut(dejaVu!, dir)).toBeNull();
    const cut = await makeCut(dejaVu!, dir);
    const bytes = (files: string[]): number => files.reduce((n, f) => n + statSync(f).size, 0);
    expect(bytes(cut.files)).toBeLessThan(bytes(dejaVu!.files) / 5); // what makes them worth it
    const onCut: string[] = [];
    for (const c of [...cases, ...more]) {
      const svg = await specToSvg(specOf(c));
      const fonts = fontsFor(svg, cut, dejaVu);
      if (fonts.fontFiles !== cut.files) continue;
      onCut.push(c.name);
      const width = c.width ?? 800;
      const whole = await svgToPng(svg, width, fontsFor(svg, dejaVu));
      expect(whole.equals(await svgToPng(svg, width, fonts)), c.name).toBe(true);
    }
    // the charts of ASCII text; Cyrillic and CJK are beyond the cut (the first case's title is all ASCII)
    expect(onCut).toContain(cases[0]!.name);
    expect(onCut).not.toContain('accents, Greek, Cyrillic');
    expect(onCut).not.toContain('a CJK run name');
  });

  withDejaVu('are made once per machine, found again by the next process, remade if unreadable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlwatch-cut-'));
    const cut = await makeCut(dejaVu!, dir);
    const times = cut.files.map((f) => statSync(f).mtimeMs);
    expect(madeCut(dejaVu!, dir)?.files).toEqual(cut.files);
    expect((await makeCut(dejaVu!, dir)).files.map((f) => statSync(f).mtimeMs)).toEqual(times);
    // their characters, read from the cut files' own cmap: the kept ones both whole faces draw
    const covered = (ch: string): boolean => cut.covered[ch.charCodeAt(0)] === 1;
    for (const ch of ['A', '~', 'é', 'Ω', '·', '\u2212', '…']) expect(covered(ch), ch).toBe(true);
    for (const ch of ['Ж', '训', '\u0007']) expect(covered(ch), ch).toBe(false);
    writeFileSync(cut.files[1]!, 'not a font');
    expect(madeCut(dejaVu!, dir)).toBeNull();
    expect((await makeCut(dejaVu!, dir)).covered).toEqual(cut.covered);
  });
});
