/** Where the package's own files are (migrations/, samples/), the same from the sources and from the bundle. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's root folder (where package.json, migrations/ and samples/ are), found by walking up from this
 * module: the same answer from the sources (src/) and from the bundle (dist/), wherever the module file sits.
 */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'migrations')) && existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`rlwatch: no migrations/ folder above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

export const PACKAGE_ROOT = packageRoot();
export const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'migrations');
export const SAMPLES_DIR = join(PACKAGE_ROOT, 'samples');
