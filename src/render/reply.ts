/**
 * The Reply every command answers and every front end renders (the CLI prints it, the chat adapters draw it, the
 * redactor cleans it), with the chart it may carry.
 */
/** What a command answers, whatever the front end: the CLI prints it, the chat adapters render it. */
export interface Reply {
  title: string;
  /** name/value pairs shown as a table (CLI) or embed fields (chat) */
  fields: Array<{ name: string; value: string }>;
  /** free text below the fields */
  lines: string[];
  /** people's display names in its title and lines (untrusted): a front end whose text formats shows them
   * literally, `*boss*` as typed */
  names?: string[];
  /** preformatted text (generations, code) shown as code blocks, each under its title */
  blocks?: Array<{
    title: string;
    code: string;
    /** its end matters (a log tail): cut from the start */
    tail?: boolean;
  }>;
  /** a line chart the chat front ends render as a PNG */
  chart?: ChartSpec;
  /** the machine-readable answer: what `--json` prints (a promise where it reads more, built only when asked) */
  data: unknown;
  /** a file sent with the reply (the full run report as Markdown); the CLI writes it with --markdown FILE */
  attachment?: { name: string; content: string };
}

export interface ChartSpec {
  title: string;
  metric: string;
  points: Array<{ step: number; value: number }>;
  /** a step to mark (an alert's firing step) */
  markStep?: number;
  /** a value to draw as a horizontal line (the alert rule's threshold) */
  threshold?: number;
  /** a second run's series over the same axis (run compare) */
  second?: { points: Array<{ step: number; value: number }> };
  /** the x axis title when it is not `step` */
  xTitle?: string;
}
