/** What to do about the Bot API's refusals of a post, by the description `BotApi` puts in its message. */
const ADVICE: Array<[RegExp, string]> = [
  [/Unauthorized/, 'the token was refused: copy it again from BotFather (/mybots > API Token) into TELEGRAM_BOT_TOKEN'],
  [
    /chat not found/,
    'no chat with this id that the bot is in: add the bot to the group, post a message there, and ' +
      'read the chat id (negative for groups) from getUpdates into TELEGRAM_CHAT_ID or telegram.channel',
  ],
  [/bot was blocked by the user/, 'the user blocked the bot: unblock it in that private chat'],
  [
    /not enough rights/,
    'the bot may not post in this chat: let members (or the bot, as an admin) send messages and photos',
  ],
];

export const telegramAdvice = (err: Error): string | undefined => ADVICE.find(([re]) => re.test(err.message))?.[1];
