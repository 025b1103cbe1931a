import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
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

export { learningLine, learningLines } from './learningLines.ts';

/**
 * `../shared/real-logs` beside the checkout: real training logs others published, read (never copied) by the
 * tests. CI has `../shared` there; without it the corpus tests would read nothing, so say so plainly.
 */
export function realLogsDir(): string {
  const dir = resolve(dirname(fileURLToPath(import.meta.url)), '../../shared/real-logs');
  if (!existsSync(dir)) throw new Error(`${dir} not found: the real-log tests need ../shared beside the checkout`);
  return dir;
}
