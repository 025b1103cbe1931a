import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];
// after the file's tests, not each test: a `beforeAll` fixture lives as long as its tests
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed once the test file is done. */
export function tempDir(prefix = 'rlw-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function ensureParent(path: string): string {
  mkdirSync(dirname(path), { recursive: true });
  return path;
}

export { learningLine } from './seedLines.ts';
