// Preloaded (`node --import`) into a process the bench measures: at exit, writes the process's peak RSS (KB)
// to the file named by BENCH_RSS_FILE. The process itself (bin/rlwatch) is not changed for the bench.
import { writeFileSync } from 'node:fs';

const out = process.env.BENCH_RSS_FILE;
if (out) process.on('exit', () => writeFileSync(out, String(process.resourceUsage().maxRSS)));
