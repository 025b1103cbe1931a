/**
 * The zod schema of rlwatch.yaml, with its defaults; an unknown key is an error, so a typo never falls back silently.
 */
import { PLATFORMS } from '../platforms/index.ts';
import { DEFAULT_MAX_METRIC_NAMES } from './storeSettings.ts';
import * as z from '../lib/zod.ts';
import { duration, nonEmpty, wholeFrom } from '../lib/zod.ts';

const platformSections: Record<string, z.ZodMiniType> = Object.fromEntries(PLATFORMS.map((p) => [p.id, p.section]));

/** `watch.prefix`: names joined by single slashes, nothing a run name could not show on one line. */
const RUN_PREFIX = /^(?:[^/\s\p{Cc}]+(?:\/[^/\s\p{Cc}]+)*)?$/u;
const RUN_PREFIX_EXPECTED = 'a name like gpu-a or site/gpu-a: no spaces, no leading, trailing or double /';

/** rlwatch.yaml. Unknown keys are errors: a typo must not silently fall back to a default. */
export const ConfigSchema = z.strictObject({
  /** SQLite file; `--db` and RLWATCH_DB take precedence. Relative to the config file. */
  db: z.optional(nonEmpty()),
  watch: z.prefault(
    z.strictObject({
      /** directories whose sub-directories holding logs are runs; relative to the config file */
      roots: z._default(z.array(nonEmpty()), []),
      /** poll instead of fs events: NFS, Lustre and other network file systems send no events */
      poll: z._default(z.boolean(), false),
      pollIntervalMs: z._default(wholeFrom(100), 2000),
      /** extra glob-free path fragments to ignore (dot-directories and node_modules always are) */
      ignore: z._default(z.array(nonEmpty()), []),
      /** how deep below a root to look for runs */
      depth: z._default(wholeFrom(0, 32), 8),
      /** run names made from folders are `<prefix>/<name>`, so that hosts sharing one PostgreSQL never meet in one
       * run; unset: none on SQLite, the host's name on PostgreSQL (src/store/open.ts `runPrefix`); "" for none */
      prefix: z.optional(z.string().check(z.maxLength(100), z.regex(RUN_PREFIX, RUN_PREFIX_EXPECTED))),
    }),
    {},
  ),
  ingest: z.prefault(
    z.strictObject({
      /** longer lines are skipped and counted, never held in memory whole */
      maxLineBytes: z._default(wholeFrom(1024), 8 * 1024 * 1024),
      /** best and worst generations kept per step */
      examplesPerStep: z._default(wholeFrom(0, 50), 2),
      /** distinct metric names a run may have: values of names past it are not stored, and are counted and named
       * among the file's skips (`rlwatch files`) */
      maxMetricNames: z._default(wholeFrom(1), DEFAULT_MAX_METRIC_NAMES),
    }),
    {},
  ),
  // each platform's section, by its id (src/platforms/index.ts)
  ...platformSections,
  alerts: z.prefault(
    z.strictObject({
      /** the built-in rules: `grpo` (see README) or `none` */
      preset: z._default(z.enum(['grpo', 'none']), 'grpo'),
      /** how often a firing, unacknowledged alert is announced again */
      repeatInterval: z._default(duration(), '4h'),
      /** rules to add, and changes to preset rules (by id; with `runs`, for matching runs only) */
      rules: z._default(z.array(z.unknown()), []),
    }),
    {},
  ),
  /** `run report`: expected ranges replacing or adding to the preset's (src/report/ranges.ts) */
  report: z.prefault(
    z.strictObject({
      ranges: z._default(
        z.record(nonEmpty(), z.strictObject({ min: z.optional(z.number()), max: z.optional(z.number()) })),
        {},
      ),
      /** records in the report's window when no --since is given */
      window: z._default(wholeFrom(2), 50),
      /** a report is posted when a watched run reaches each of these epochs (`[]`: none) */
      milestones: z._default(z.array(z.number().check(z.positive())), [0.5, 1]),
      /** the daily digest per channel at this time (HH:MM) of `digestZone`, or `off` */
      digest: z._default(
        z.string().check(z.regex(/^(off|([01]\d|2[0-3]):[0-5]\d)$/, { message: 'expected HH:MM or off' })),
        '09:00',
      ),
      /** the IANA time zone of `digest` (Europe/Paris, America/New_York) */
      digestZone: z._default(
        z.string().check(z.refine(validZone, { message: 'expected an IANA time zone such as UTC or Europe/Paris' })),
        'UTC',
      ),
    }),
    {},
  ),
  /** secrets are always redacted from what leaves the machine (src/notify/redact.ts); these regular expressions
   * are redacted too, each match replaced whole */
  redact: z.prefault(
    z.strictObject({ patterns: z._default(z.array(z.string().check(z.superRefine(regexIssue))), []) }),
    {},
  ),
});

/** A pattern that is not a JavaScript regular expression, named with the reason. */
function regexIssue(pattern: string, ctx: z.core.$RefinementCtx<string>): void {
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'g');
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `not a regular expression (${(err as Error).message})`, input: pattern });
    return;
  }
  // one that matches nothing at all would put [redacted] between every two characters
  if (re.test(''))
    ctx.addIssue({ code: 'custom', message: 'matches the empty text: it would redact everything', input: pattern });
}

export type Config = z.infer<typeof ConfigSchema>;

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
