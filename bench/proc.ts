/** What the benchmarks read of the processes they start, from /proc (Linux), and the environment they start them in. */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Linux's USER_HZ: /proc/PID/stat counts CPU time in 1/100 s on every architecture Node runs on */
const TICKS_PER_SECOND = 100;

/** The fields of /proc/PID/stat after the command's name (which may hold spaces), and that name. */
function stat(pid: number | string): { name: string; fields: string[] } {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return {
    name: text.slice(text.indexOf('(') + 1, text.lastIndexOf(')')),
    fields: text.slice(text.lastIndexOf(')') + 2).split(' '),
  };
}

const cpuOf = (fields: string[]): number => (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND; // utime, stime

/** CPU seconds (user + system) the process has used so far. */
export function cpuSeconds(pid: number): number {
  return cpuOf(stat(pid).fields);
}

/** CPU seconds so far of every process named `name` (e.g. a PostgreSQL server and its backends). */
export function cpuSecondsOfAll(name: string): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const s = stat(pid);
      if (s.name === name) total += cpuOf(s.fields);
    } catch {
      // it ended while listed
    }
  }
  return total;
}

export function rssMB(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** This environment without rlwatch's own settings and any chat platform's: rlwatch as a user starts it bare. */
export function bareEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(DISCORD|SLACK|TELEGRAM|SMTP|RLWATCH|WEBHOOK|TEAMS|MATTERMOST|FEISHU)/.test(k),
    ),
  );
}

/** A bench script (`bench/<script>`, through tsx) in a process of its own, as the product runs in its own: the JSON
 * of the last line it prints. Its stderr goes to ours. */
export function jsonOfChild<T>(script: string, args: readonly string[]): T {
  const child = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, script), ...args], {
    cwd: join(import.meta.dirname, '..'),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const last = child.stdout.trim().split('\n').pop() ?? '';
  if (child.status !== 0 || !last.startsWith('{')) throw new Error(`bench/${script} failed: status ${child.status}`);
  return JSON.parse(last) as T;
}
