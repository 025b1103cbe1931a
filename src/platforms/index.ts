/** The platforms rlwatch can notify, one line each. */
import { discord } from './discord/index.ts';
import type { Platform } from './platform.ts';
import { slack } from './slack/index.ts';

export const PLATFORMS: readonly Platform[] = [discord, slack];
