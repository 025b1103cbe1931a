import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ActionRowBuilder,
  ButtonBuilder,
  ButtonStyle,
  Client,
  EmbedBuilder,
  GatewayIntentBits,
  SlashCommandBuilder,
  TextChannel,
  type Interaction,
} from 'discord.js';
import { startFakeDiscord, type FakeDiscord } from './discordServer.ts';

// 1x1 transparent PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const ana = { id: '111111111111111111', username: 'ana' };

type Handler = (i: Interaction) => Promise<void>;

describe('fake Discord server with the real discord.js Client', () => {
  let fake: FakeDiscord;
  let client: Client;
  let handler: Handler = async () => {};
  const handlerErrors: unknown[] = [];

  const channel = (): TextChannel => {
    const ch = client.channels.cache.get(fake.channelId);
    if (!(ch instanceof TextChannel)) throw new Error('text channel missing from cache');
    return ch;
  };

  beforeAll(async () => {
    fake = await startFakeDiscord({ roles: [{ name: 'oncall' }] });
    client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.apiUrl, retries: 0 } });
    client.on('interactionCreate', (i) => {
      handler(i).catch((e: unknown) => handlerErrors.push(e));
    });
    const ready = once(client, 'clientReady');
    await client.login(fake.token);
    await ready;
  }, 10_000);

  afterAll(async () => {
    await client?.destroy();
    await fake?.close();
  }, 10_000);

  it('logs in, gets READY and a GUILD_CREATE with the text channel', () => {
    expect(client.isReady()).toBe(true);
    expect(client.user?.id).toBe(fake.botUserId);
    expect(client.application?.id).toBe(fake.applicationId);
    const guild = client.guilds.cache.get(fake.guildId);
    expect(guild?.available).toBe(true);
    expect(channel().name).toBe('alerts');
    expect(channel().isTextBased()).toBe(true);
    expect(guild?.roles.cache.find((r) => r.name === 'oncall')).toBeDefined();
    expect(fake.identifies[0]?.intents).toBe(GatewayIntentBits.Guilds);
    expect(fake.requestsTo('GET', /^\/gateway\/bot$/)).toHaveLength(1);
    expect(fake.connectedClients).toBe(1);
  });

  it('records a bulk guild command registration and echoes ids', async () => {
    const cmd = new SlashCommandBuilder()
      .setName('rlwatch')
      .setDescription('rlwatch')
      .addSubcommand((s) =>
        s
          .setName('status')
          .setDescription('run status')
          .addStringOption((o) => o.setName('run').setDescription('run').setRequired(true).setAutocomplete(true))
          .addNumberOption((o) => o.setName('window').setDescription('window')),
      )
      .addSubcommand((s) =>
        s
          .setName('mute')
          .setDescription('mute')
          .addIntegerOption((o) => o.setName('minutes').setDescription('m')),
      );
    const set = await client.application!.commands.set([cmd.toJSON()], fake.guildId);
    expect(set.first()?.name).toBe('rlwatch');
    const req = fake.requestsTo('PUT', /^\/applications\/\d+\/guilds\/\d+\/commands$/);
    expect(req).toHaveLength(1);
    expect((req[0]!.body as Array<{ name: string }>)[0]!.name).toBe('rlwatch');
    expect(fake.commands.map((c) => [c.name, c.guild_id])).toEqual([['rlwatch', fake.guildId]]);
    expect(set.first()?.id).toBe(fake.commands[0]!.id);

    await client.application!.commands.set([{ name: 'ping', description: 'ping' }]);
    expect(fake.requestsTo('PUT', /^\/applications\/\d+\/commands$/)).toHaveLength(1);
    expect(fake.commands.map((c) => c.name).sort()).toEqual(['ping', 'rlwatch']);
  });

  it('channel.send with embed, PNG file and buttons arrives as multipart with the bytes', async () => {
    const row = new ActionRowBuilder<ButtonBuilder>().addComponents(
      new ButtonBuilder().setCustomId('ack:run1').setLabel('Ack').setStyle(ButtonStyle.Primary),
    );
    const sent = await channel().send({
      content: 'KL spike on run1',
      embeds: [new EmbedBuilder().setTitle('kl').setDescription('kl > 0.5')],
      files: [{ attachment: PNG, name: 'chart.png' }],
      components: [row],
    });
    const req = fake.requestsTo('POST', new RegExp(`^/channels/${fake.channelId}/messages$`)).at(-1)!;
    expect(req.multipart).toBe(true);
    expect(req.files).toHaveLength(1);
    expect(req.files[0]!.name).toBe('chart.png');
    expect(req.files[0]!.contentType).toBe('image/png');
    expect(req.files[0]!.data.equals(PNG)).toBe(true);
    expect(req.body).toMatchObject({ content: 'KL spike on run1', embeds: [{ title: 'kl' }] });

    const stored = fake.messages.get(sent.id)!;
    expect(stored.content).toBe('KL spike on run1');
    expect(stored.attachments[0]!.data.equals(PNG)).toBe(true);
    expect(stored.components[0]!.components[0]!.custom_id).toBe('ack:run1');
    // discord.js accepted the returned message object.
    expect(sent.author.id).toBe(fake.botUserId);
    expect(sent.attachments.first()?.name).toBe('chart.png');
    expect(sent.attachments.first()?.url.startsWith('http://127.0.0.1:')).toBe(true);
    const bytes = Buffer.from(await (await fetch(sent.attachments.first()!.url)).arrayBuffer());
    expect(bytes.equals(PNG)).toBe(true);

    // edit + fetch go through PATCH/GET /channels/{id}/messages/{id}
    await sent.edit({ content: 'KL spike on run1 (resolved)' });
    expect(fake.messages.get(sent.id)!.content).toBe('KL spike on run1 (resolved)');
    expect(fake.messages.get(sent.id)!.attachments).toHaveLength(1);
    const fetched = await channel().messages.fetch({ message: sent.id, force: true });
    expect(fetched.content).toBe('KL spike on run1 (resolved)');
  });

  it('delivers a slash command with subcommand + options; ephemeral reply is recorded', async () => {
    const seen: Record<string, unknown> = {};
    handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      seen.name = i.commandName;
      seen.sub = i.options.getSubcommand();
      seen.run = i.options.getString('run');
      seen.window = i.options.getNumber('window');
      seen.user = i.user.username;
      seen.hasRole = i.inCachedGuild() && i.member.roles.cache.some((r) => r.name === 'oncall');
      await i.reply({ content: 'run1 is healthy', ephemeral: true });
    };
    const out = await fake.command({
      name: 'rlwatch',
      subcommand: 'status',
      options: { run: 'run1', window: 50 },
      user: ana,
      roles: ['oncall'],
    });
    expect(seen).toEqual({ name: 'rlwatch', sub: 'status', run: 'run1', window: 50, user: 'ana', hasRole: true });
    expect(out.callback?.type).toBe(4);
    expect(out.callback?.data).toMatchObject({ content: 'run1 is healthy', flags: 64 });
    const msg = fake.messages.get(out.originalMessageId!)!;
    expect(msg.content).toBe('run1 is healthy');
    expect(msg.flags & 64).toBe(64);
    expect(handlerErrors).toEqual([]);
  });

  it('supports deferReply + editReply + followUp and withResponse', async () => {
    handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      const res = await i.deferReply({ withResponse: true });
      expect(res.interaction.responseMessageLoading).toBe(true);
      await i.editReply({ content: 'muted for 30 min', files: [{ attachment: PNG, name: 'chart.png' }] });
      await i.followUp({ content: 'also FYI' });
    };
    const out = await fake.command({ name: 'rlwatch', subcommand: 'mute', options: { minutes: 30 }, user: ana });
    expect(out.callback?.type).toBe(5);
    expect(out.callback?.withResponse).toBe(true);
    await fake.waitFor(() => out.followUps.length === 1, 3000);
    expect(out.edits).toHaveLength(1);
    expect(out.edits[0]!.files[0]!.data.equals(PNG)).toBe(true);
    const original = fake.messages.get(out.originalMessageId!)!;
    expect(original.content).toBe('muted for 30 min');
    expect(original.flags & 128).toBe(0); // no longer loading
    expect(fake.messages.get(out.followUps[0]!.messageId)!.content).toBe('also FYI');
    expect(handlerErrors).toEqual([]);
  });

  it('answers autocomplete', async () => {
    handler = async (i) => {
      if (!i.isAutocomplete()) return;
      const focused = i.options.getFocused(true);
      await i.respond([{ name: `${focused.name}:${focused.value}-a`, value: 'run-a' }]);
    };
    const choices = await fake.autocomplete({
      name: 'rlwatch',
      subcommand: 'status',
      focused: { name: 'run', value: 'ru' },
      user: ana,
    });
    expect(choices).toEqual([{ name: 'run:ru-a', value: 'run-a' }]);
  });

  it('a button click reaches the client and interaction.update edits the message', async () => {
    const row = new ActionRowBuilder<ButtonBuilder>().addComponents(
      new ButtonBuilder().setCustomId('ack:run2').setLabel('Ack').setStyle(ButtonStyle.Primary),
    );
    const sent = await channel().send({ content: 'reward collapse on run2', components: [row] });
    handler = async (i) => {
      if (!i.isButton()) return;
      const disabled = new ActionRowBuilder<ButtonBuilder>().addComponents(
        ButtonBuilder.from(i.component).setDisabled(true),
      );
      await i.update({ content: `${i.message.content} — Acked by @${i.user.username}`, components: [disabled] });
    };
    const out = await fake.click({ customId: 'ack:run2', messageId: sent.id, user: ana });
    expect(out.callback?.type).toBe(7);
    const msg = fake.messages.get(sent.id)!;
    expect(msg.content).toBe('reward collapse on run2 — Acked by @ana');
    expect(msg.components[0]!.components[0]).toMatchObject({ custom_id: 'ack:run2', disabled: true });
    await expect(fake.click({ customId: 'ack:run2', messageId: sent.id, user: ana })).rejects.toThrow(/disabled/);
    expect(handlerErrors).toEqual([]);
  });

  it('429 with retry_after is honoured by @discordjs/rest even with retries: 0', async () => {
    // @discordjs/rest (node_modules/@discordjs/rest/dist/index.js, SequentialHandler.runRequest ~1138-1196)
    // never counts a 429 against `retries`: it records X-RateLimit-Remaining: 0 / Reset-After, then loops in
    // `while (this.limited)` sleeping until the reset (+ `offset`, 50 ms), emits `rateLimited`, and re-sends the
    // same request. So with `retries: 0` a 429 is still retried (forever, unless `rejectOnRateLimit` is set);
    // `retries` only applies to 5xx and network errors.
    const limited: unknown[] = [];
    const onLimited = (info: unknown): void => void limited.push(info);
    client.rest.on('rateLimited', onLimited);
    try {
      fake.failNext('POST', /^\/channels\/\d+\/messages$/, { status: 429, retryAfter: 1 });
      const before = fake.requests.length;
      const t0 = Date.now();
      const msg = await channel().send({ content: 'after rate limit' });
      const elapsed = Date.now() - t0;
      const posts = fake.requests.slice(before).filter((r) => r.method === 'POST');
      expect(posts.map((r) => r.status)).toEqual([429, 200]);
      expect(elapsed).toBeGreaterThanOrEqual(950);
      expect(elapsed).toBeLessThan(5000);
      expect(limited.length).toBeGreaterThanOrEqual(1);
      expect(fake.messages.get(msg.id)?.content).toBe('after rate limit');
    } finally {
      client.rest.off('rateLimited', onLimited);
    }
  });

  it('a 500 is not retried with retries: 0 and rejects', async () => {
    fake.failNext('POST', /^\/channels\/\d+\/messages$/, { status: 500 });
    const before = fake.requests.length;
    await expect(channel().send({ content: 'x' })).rejects.toMatchObject({ status: 500 });
    expect(fake.requests.length - before).toBe(1);
  });

  it('setDown(true) makes channel.send reject until setDown(false)', async () => {
    fake.setDown(true);
    try {
      await expect(channel().send({ content: 'while down' })).rejects.toMatchObject({ status: 503 });
    } finally {
      fake.setDown(false);
    }
    const ok = await channel().send({ content: 'back up' });
    expect(fake.messages.get(ok.id)?.content).toBe('back up');
  });
});

describe('fake Discord gateway details', () => {
  it('acknowledges heartbeats (op 1 -> op 11)', async () => {
    const fake = await startFakeDiscord({ heartbeatIntervalMs: 100 });
    const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.apiUrl, retries: 0 } });
    try {
      const ready = once(client, 'clientReady');
      await client.login(fake.token);
      await ready;
      await fake.waitFor(() => fake.heartbeats >= 3, 3000);
      expect(client.ws.ping).toBeGreaterThanOrEqual(0);
      expect(client.ws.status).toBe(0); // Status.Ready: no zombie-connection reconnects
    } finally {
      await client.destroy();
      await fake.close();
    }
  }, 10_000);

  it('rejects a wrong token with 401 on GET /gateway/bot (discord.js reports TokenInvalid)', async () => {
    const fake = await startFakeDiscord();
    const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.apiUrl, retries: 0 } });
    try {
      await expect(client.login('not-the-token')).rejects.toMatchObject({ code: 'TokenInvalid' });
      expect(fake.requests[0]).toMatchObject({ method: 'GET', path: '/gateway/bot', status: 401 });
    } finally {
      await client.destroy();
      await fake.close();
    }
  }, 10_000);

  it('close() with a client still connected makes it stop instead of reconnecting forever', async () => {
    const fake = await startFakeDiscord();
    const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.apiUrl, retries: 0 } });
    client.on('shardError', () => {}); // the 4004 close surfaces as "Authentication failed"
    let reconnecting = 0;
    client.on('shardReconnecting', () => void reconnecting++);
    try {
      const ready = once(client, 'clientReady');
      await client.login(fake.token);
      await ready;
      await fake.close();
      await new Promise((r) => setTimeout(r, 700)); // @discordjs/ws would retry after 500 ms
      expect(reconnecting).toBe(0);
      expect(fake.connectedClients).toBe(0);
    } finally {
      await client.destroy();
      await fake.close();
    }
  }, 10_000);
});
