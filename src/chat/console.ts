import type { Reply } from '../commands/reply.ts';

const bold = (s: string, color: boolean): string => (color ? `\x1b[1m${s}\x1b[22m` : s);
const dim = (s: string, color: boolean): string => (color ? `\x1b[2m${s}\x1b[22m` : s);

/** A Reply as terminal text: the title, the fields as an aligned table, then the free lines. */
export function renderReplyText(reply: Reply, color: boolean): string {
  const out = [bold(reply.title, color)];
  const width = Math.max(0, ...reply.fields.map((f) => f.name.length));
  for (const f of reply.fields) out.push(`  ${dim(f.name.padEnd(width), color)}  ${f.value}`);
  for (const line of reply.lines) out.push(`  ${line}`);
  return out.join('\n');
}
