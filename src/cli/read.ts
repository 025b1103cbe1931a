/**
 * The CLI's reading and alert commands: `runs`, `outbox` and `outbox retry`, and every command of the shared tree
 * (`alerts`, `run status`, `ack`, `mute`, ...) added as the chat platforms add it, answered on the terminal.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { writeFileSync } from 'node:fs';
import { interact } from '../interact/interaction.ts';
import { type Args, COMMANDS, type CommandSpec, usage } from '../interact/registry.ts';
import { UserError } from '../lib/errors.ts';
import { silentLog } from '../lib/log.ts';
import { print, withStore } from './common.ts';

export function registerRuns(program: Command): void {
  program
    .command('runs')
    .description('list the runs (the same as `rlwatch run list`)')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }, cmd: Command) =>
      withStore(cmd, async (store) => {
        const { runList } = await import('../commands/runList.ts');
        await print(await runList({ store, local: true }), opts.json);
      }),
    );
}

export function registerOutbox(program: Command): void {
  const outbox = program
    .command('outbox')
    .description('notifications not delivered yet: pending, and set aside because a target refused them')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }, cmd: Command) =>
      withStore(cmd, async (store) => {
        const { outboxList } = await import('../commands/outbox.ts');
        await print(await outboxList({ store }), opts.json);
      }),
    );
  outbox
    .command('retry')
    .description('put a set-aside notification back in line')
    .argument('<id>', 'the outbox row (see `rlwatch outbox`)', (v) => {
      if (!/^\d+$/.test(v)) throw new InvalidArgumentError('expected a row number');
      return Number(v);
    })
    .option('--json', 'print JSON')
    .action((id: number, opts: { json?: boolean }, cmd: Command) =>
      withStore(cmd, async (store) => {
        const { outboxRetry } = await import('../commands/outbox.ts');
        await print(await outboxRetry({ store }, { id }), opts.json);
      }),
    );
}

const user = (): string => process.env.USER ?? process.env.USERNAME ?? 'cli';

/** Adds a command of the shared tree: positional words are read as chat text is, flags by name. */
function addShared(parent: Command, spec: CommandSpec): void {
  const cmd = parent.command(spec.path[spec.path.length - 1] as string).description(spec.description);
  const positional = spec.options.filter((o) => o.positional);
  const takesWords = spec.options.length > 0;
  if (takesWords) {
    // the words are read as a chat slash command's `/mute grpo-7b 2h`; every option also has its --flag
    cmd.argument(
      '[words...]',
      `${usage(spec, '')
        .split(' ')
        .slice(spec.path.length + 1)
        .join(' ')}, as in chat`,
    );
    cmd.usage(`[options] ${positional.map((o) => (o.required ? `<${o.name}>` : `[${o.name}]`)).join(' ')}`.trim());
  }
  for (const o of takesWords ? spec.options : []) {
    const flag = o.flag ?? o.name;
    cmd.option(o.type === 'boolean' ? `--${flag}` : `--${flag} <${o.name}>`, o.description);
  }
  if (spec.access === 'write') cmd.option('--by <name>', 'who (default: $USER)');
  if (spec.attaches) cmd.option('--markdown <file>', 'also write the full report (Markdown) to this file');
  cmd.option('--json', 'print JSON');
  cmd.action(async (...params: unknown[]) => {
    const self = params[params.length - 1] as Command;
    const words = takesWords ? (params[0] as string[]) : [];
    const opts = self.opts<Record<string, string | boolean | undefined>>();
    const args: Args = {};
    for (const o of spec.options) {
      const v = opts[o.flag ?? o.name];
      if (v !== undefined) args[o.name] = v;
    }
    await withStore(self, async (store, config) => {
      // the CLI is its own rights check (whoever can open the database) and shows its own errors (main)
      const answer = await interact(
        { words: [...spec.path, ...words], args },
        {
          store,
          config,
          log: silentLog,
          user: String(opts.by ?? user()),
          userName: String(opts.by ?? user()),
          mayWrite: () => true,
          rightsHint: '',
          prefix: 'rlwatch ',
          local: true,
        },
      );
      if (!answer.ok) throw answer.error ?? new UserError(answer.message);
      if (typeof opts.markdown === 'string' && answer.reply.attachment) {
        writeFileSync(opts.markdown, answer.reply.attachment.content);
      }
      await print(answer.reply, opts.json === true);
    });
  });
}

/** Every command of the shared tree, under its group (`run`, `reward`, ...) where it has one. */
export function registerShared(program: Command): void {
  const groups = new Map<string, Command>();
  for (const spec of COMMANDS) {
    if (spec.path.length === 1) {
      addShared(program, spec);
      continue;
    }
    const [group] = spec.path;
    let parent = groups.get(group);
    if (!parent) {
      parent = program.command(group).description(group === 'run' ? 'one run' : `${group} over time`);
      groups.set(group, parent);
    }
    addShared(parent, spec);
  }
}
