/** The platforms rlwatch can notify, one line each. */
import { discord } from './discord/index.ts';
import { email } from './email/index.ts';
import { feishu } from './feishu/index.ts';
import { mattermost } from './mattermost/index.ts';
import type { Platform } from './platform.ts';
import { slack } from './slack/index.ts';
import { teams } from './teams/index.ts';
import { telegram } from './telegram/index.ts';
import { webhook } from './webhook/index.ts';

export const PLATFORMS: readonly Platform[] = [discord, slack, telegram, email, webhook, teams, mattermost, feishu];

export { fail, ok, platformChecks, warn, type Check, type Status } from './doctor.ts';
export {
  ENV_SECTIONS,
  INIT_HELP,
  INIT_PLATFORMS,
  SETUP_FILES,
  YAML_SECTIONS,
  type InitPlatform,
} from './initTemplates.ts';
