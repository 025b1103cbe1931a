/**
 * What `rlwatch init` writes for each chat platform it offers: its section of rlwatch.yaml (commented), its
 * variables in .env (empty, each with where to get it), and its --flag's help.
 */

export const INIT_PLATFORMS = ['discord', 'slack', 'telegram', 'email', 'webhook'] as const;
export type InitPlatform = (typeof INIT_PLATFORMS)[number];

/** The help of each platform's `rlwatch init --<id>` flag. */
export const INIT_HELP: Record<InitPlatform, string> = {
  discord: 'alerts to Discord',
  slack: 'alerts to Slack',
  telegram: 'alerts to Telegram',
  email: 'alerts by email (SMTP)',
  webhook: 'alerts POSTed to a URL',
};

export const YAML_SECTIONS: Record<InitPlatform, string> = {
  discord: `
discord:                        # the token and the channel come from .env (DISCORD_TOKEN, DISCORD_CHANNEL_ID)
  # channel: '123456789012345678'   # the alert channel, here instead of DISCORD_CHANNEL_ID
  allow:                        # who may ack and mute; both empty = anyone in the channel
    users: []                   # user ids
    roles: []                   # role ids
`,
  slack: `
slack:                          # the tokens and the channel come from .env (SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_CHANNEL_ID)
  mode: socket                  # socket: rlwatch dials out, no public URL needed; http: Slack calls slack.port
  allow:                        # who may ack and mute; both empty = anyone in the channel
    users: []                   # user ids (U...)
    groups: []                  # user-group ids (S...)
`,
  telegram: `
telegram:                       # the token and the chat come from .env (TELEGRAM_BOT_TOKEN, TELEGRAM_CHAT_ID)
  allow:
    users: []                   # user ids that may ack and mute; empty = anyone in the chat
`,
  email: `
email: {}                       # the server, the login and the addresses come from .env (SMTP_*, EMAIL_*)
`,
  webhook: `
webhook:                        # the URL comes from .env (WEBHOOK_URL)
  urls: {}                      # more URLs by name, for routes (docs/platforms.md)
`,
};

export const ENV_SECTIONS: Record<InitPlatform, string> = {
  discord: `
# --- Discord (step by step: docs/platforms/discord.md) ---
# The bot's token: https://discord.com/developers/applications > your application > Bot > Reset Token
DISCORD_TOKEN=
# The alert channel's id: User Settings > Advanced > Developer Mode on, then right-click the channel > Copy Channel ID
DISCORD_CHANNEL_ID=
# The server's id (right-click the server > Copy Server ID): slash commands show there at once, not within an hour
DISCORD_GUILD_ID=
`,
  slack: `
# --- Slack (step by step: docs/platforms/slack.md; create the app from slack-app-manifest.yaml) ---
# The Bot User OAuth Token (xoxb-...): your app at https://api.slack.com/apps > OAuth & Permissions
SLACK_BOT_TOKEN=
# The app-level token (xapp-...) for Socket Mode: Basic Information > App-Level Tokens, with connections:write
SLACK_APP_TOKEN=
# The alert channel's id (C...): the channel's name > About, at the bottom; then /invite @rlwatch in the channel
SLACK_CHANNEL_ID=
`,
  telegram: `
# --- Telegram ---
# The bot's token: talk to @BotFather, /newbot (or /mybots > your bot > API Token)
TELEGRAM_BOT_TOKEN=
# The chat alerts go to: add the bot to the group, post there, and read chat.id in
# https://api.telegram.org/bot<token>/getUpdates (a group's id starts with -)
TELEGRAM_CHAT_ID=
`,
  email: `
# --- Email over SMTP: your provider's SMTP settings ---
# The server and port (587 with STARTTLS, or 465 with SMTP_SECURE=true)
SMTP_HOST=
SMTP_PORT=587
SMTP_SECURE=false
# The login (many providers want an app password here, not your own)
SMTP_USER=
SMTP_PASS=
# The sender, and where alerts go
EMAIL_FROM=
EMAIL_TO=
`,
  webhook: `
# --- Webhook: rlwatch POSTs each alert as JSON to this URL ---
# The URL of the service that receives them
WEBHOOK_URL=
# Optional: a secret of your choosing; each body is then signed with it (X-Rlwatch-Signature)
WEBHOOK_SECRET=
`,
};

/** Files a platform's setup needs that the package ships (the Slack app's manifest), named by `rlwatch init`. */
export const SETUP_FILES: readonly string[] = ['slack-app-manifest.yaml'];
