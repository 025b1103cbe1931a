/** Fitting text into a chat platform's length limits: cut with an ellipsis, code blocks whose fence survives the cut,
 * parts joined while they fit, and a log's last lines. */

/** Cuts text to `max` characters, marking the cut with an ellipsis. */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  return max <= 1 ? text.slice(0, max) : `${text.slice(0, max - 1)}…`;
}

/** A fenced code block of at most `max` characters in all: the code is cut, never the fence, and a
 * fence inside the code cannot close the block early. */
export function codeBlock(code: string, max: number): string {
  const fence = '```';
  const safe = code.replace(/```/g, '`\u200b``');
  const room = max - 2 * fence.length - 2;
  return room <= 0 ? '' : `${fence}\n${cut(safe, room)}\n${fence}`;
}

/** Joins parts with `sep`, dropping whole parts from the end once `max` would be exceeded. */
export function joinWithin(parts: readonly string[], sep: string, max: number): string {
  let out = '';
  for (const p of parts) {
    const next = out === '' ? p : `${out}${sep}${p}`;
    if (next.length > max) break;
    out = next;
  }
  return out;
}

/** The end of some log lines as a code block of at most `max` characters: whole lines are dropped from the
 * start (the exception line is last, and matters most), and a line too long alone keeps its start. */
export function tailBlock(lines: readonly string[], max: number): string {
  const room = max - 8; // the fences, their newlines and an escaped fence or two
  const kept: string[] = [];
  let size = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] as string;
    if (size + line.length + 1 > room) {
      if (kept.length === 0) kept.push(cut(line, room));
      break;
    }
    kept.unshift(line);
    size += line.length + 1;
  }
  return codeBlock(kept.join('\n'), max);
}
