/** What the CLI's commands share: the global options, the config and store they name, and printing a Reply. */
import type { Command } from 'commander';
import { readdirSync, type Stats, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig } from '../app/loadConfig.ts';
import { resolveDbPath } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import type { Reply } from '../render/reply.ts';
import { UserError } from '../lib/errors.ts';
import { renderReplyText } from '../platforms/terminal/terminal.ts';
import type { StoreContract } from '../store/contract.ts';
import { dbLocation, openStore } from '../store/open.ts';

export interface GlobalOpts {
  db?: string;
  config?: string;
}

export async function setup(cmd: Command): Promise<{ config: Config; dbPath: string }> {
  const opts = cmd.optsWithGlobals<GlobalOpts>();
  const { config } = await loadConfig(opts.config);
  return { config, dbPath: resolveDbPath(opts.db, config) };
}

/** The store `--db` names (SQLite or PostgreSQL), for a command that reads it or changes an alert or a mute. */
export async function withStore<T>(cmd: Command, fn: (store: StoreContract, config: Config) => Promise<T>): Promise<T> {
  const opts = cmd.optsWithGlobals<GlobalOpts>();
  const { config } = await loadConfig(opts.config);
  const store = await openStore(dbLocation(opts.db, config), { reading: true });
  try {
    return await fn(store, config);
  } finally {
    await store.close();
  }
}

export async function print(reply: Reply, json: boolean | undefined): Promise<void> {
  if (json) process.stdout.write(`${JSON.stringify(await reply.data, null, 2)}\n`);
  else process.stdout.write(`${renderReplyText(reply, process.stdout.isTTY === true)}\n`);
}

/** Directories named on the command line, checked so that a typo fails with one clear line. */
export function checkDirs(dirs: readonly string[]): string[] {
  return dirs.map((d) => {
    const abs = resolve(d);
    let st: Stats;
    try {
      st = statSync(abs);
      readdirSync(abs);
    } catch (err) {
      throw new UserError(`${d}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (!st.isDirectory()) throw new UserError(`${d}: not a directory`);
    return abs;
  });
}
