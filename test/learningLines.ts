/** Lines of an OCaml GRPO trainer's learning.log for tests and the benchmark (kept free of vitest, so the benchmark can import it). */

/** A learning.log line as that trainer writes it; `i` makes the values distinct. */
export function learningLine(i: number, extra: Partial<{ grad: number; frac: number }> = {}): string {
  const epoch = (i / 100).toFixed(2);
  const reward = (0.1 + i / 1000).toFixed(3);
  return (
    `[Epoch ${epoch}]  loss=-0.0${String(i % 1000).padStart(3, '0')}  grad=${(extra.grad ?? 0.05).toFixed(4)}  lr=3.58e-06  ` +
    `reward=${reward}±0.077  syntax_rew=${reward}±0.078  entropy=0.155  frac_zero_std=${(extra.frac ?? 0).toFixed(2)}`
  );
}

/** Lines `from`..`to` of `learningLine`, each ending with a newline: what a trainer appends. */
export function learningLines(from: number, to: number): string {
  return Array.from({ length: to - from + 1 }, (_, k) => `${learningLine(from + k)}\n`).join('');
}
