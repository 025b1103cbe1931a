// Whether dist/ holds the sources as they are: bin/rlwatch runs the bundle only then (else the sources, through tsx),
// and the bench, which times the bundle, checks that it still is when it ends.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const BUNDLE = 'dist/cli.js';

/** True when `root`'s bundle exists and no file under src/ is newer than it (an install without src/ has only it). */
export function bundleIsCurrent(root) {
  const bundle = join(root, BUNDLE);
  if (!existsSync(bundle)) return false;
  const built = statSync(bundle).mtimeMs;
  const src = join(root, 'src');
  if (!existsSync(src)) return true; // an install without sources (the Docker image)
  // one stat per entry, no Dirent objects: this runs before every command
  const newer = (dir) =>
    readdirSync(dir).some((name) => {
      const path = `${dir}/${name}`;
      const st = statSync(path);
      return st.isDirectory() ? newer(path) : st.mtimeMs > built;
    });
  return !newer(src);
}
