/** What to do about Discord's refusals of a post, by the message `deliveryError` (bot.ts) makes of them. */
const ADVICE: Array<[RegExp, string]> = [
  [
    /Unknown Channel/,
    'no channel has this id: copy it again (User Settings > Advanced > Developer Mode, then right-click ' +
      'the channel > Copy Channel ID) into DISCORD_CHANNEL_ID or discord.channel',
  ],
  [
    /Missing Access/,
    "the bot cannot see this channel: invite it to the channel's server (docs/platforms/discord.md) and " +
      'give its role View Channel there',
  ],
  [
    /Missing Permissions/,
    "the bot's role lacks a permission in this channel: give it Send Messages, Embed Links, Attach " +
      'Files and Read Message History there',
  ],
  [/not a text channel/, 'choose a text channel (not a category, a voice channel or a forum)'],
  [
    /not connected to Discord/,
    'the bot did not connect: the warning above says why (DISCORD_TOKEN, DISCORD_API_URL, the network)',
  ],
];

export const discordAdvice = (err: Error): string | undefined => ADVICE.find(([re]) => re.test(err.message))?.[1];
