/** Where better-sqlite3's compiled addon is, for every `new Database`, from the sources and from the bundle. */
import { createRequire } from 'node:module';

/**
 * better-sqlite3's compiled addon, handed to every `new Database` (`nativeBinding`): its own lookup (the `bindings`
 * package) tries a dozen paths found from a stack trace, and from the bundle in dist/, which carries better-sqlite3's
 * JavaScript so that start-up reads one file less than a dozen, it would look in the wrong package.
 */
export const SQLITE_ADDON = createRequire(import.meta.url).resolve('better-sqlite3/build/Release/better_sqlite3.node');
