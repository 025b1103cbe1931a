// Preloaded (`node --import`) into a process the bench measures: at exit, writes to the file named by
// BENCH_RSS_FILE the process's peak RSS (KB) and the CPU seconds of its main thread (the thread that writes to
// SQLite in a backfill; null where /proc has no per-thread figures), as JSON. The process itself (bin/rlwatch) is
// not changed for the bench.
import { readFileSync, writeFileSync } from 'node:fs';

/** utime + stime of the main thread (its task id is the pid), from /proc: CPU used, whatever else ran beside it. */
function mainThreadCpuSeconds() {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    // the fields after the command name, which is in parentheses and may hold spaces
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime: fields 14 and 15 of the line
    return ticks / 100; // USER_HZ, 100 on Linux
  } catch {
    return null;
  }
}

const out = process.env.BENCH_RSS_FILE;
if (out) {
  process.on('exit', () => {
    const measured = { maxRssKB: process.resourceUsage().maxRSS, mainCpuSeconds: mainThreadCpuSeconds() };
    writeFileSync(out, JSON.stringify(measured));
  });
}
