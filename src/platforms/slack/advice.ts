/** What to do about Slack's refusals of a post, by the Web API error code `deliveryError` (bot.ts) puts in its message. */
const ADVICE: Record<string, string> = {
  channel_not_found:
    "no channel with this id that the app can see: copy the id from the channel's details (at the bottom " +
    'of About) into SLACK_CHANNEL_ID or slack.channel; a private channel needs the app invited first (/invite @rlwatch, or the name you gave the app)',
  not_in_channel: 'the app is not in this channel: type /invite @rlwatch (or the name you gave the app) in the channel',
  is_archived: 'the channel is archived: unarchive it or choose another',
  restricted_action: 'the workspace lets only some members post in this channel: allow the app, or choose another',
  missing_scope:
    'the bot token lacks a scope: give the app chat:write and files:write (slack-app-manifest.yaml lists ' +
    'every scope rlwatch uses) and reinstall it to the workspace',
};

export function slackAdvice(err: Error): string | undefined {
  if (/not connected to Slack/.test(err.message)) {
    return 'the app did not connect: the warning above says why (SLACK_BOT_TOKEN, SLACK_APP_TOKEN, the network)';
  }
  const code = /^Slack: (\w+)/.exec(err.message)?.[1];
  return code === undefined ? undefined : ADVICE[code];
}
