/** The platforms rlwatch can notify, one line each. */
import type { Platform } from './platform.ts';

export const PLATFORMS: readonly Platform[] = [];
