import { z } from 'zod';
import { DURATION_EXPECTED, parseDuration } from '../engine/duration.ts';
import { PLATFORMS } from '../platforms/index.ts';

const platformSections: Record<string, z.ZodType> = Object.fromEntries(PLATFORMS.map((p) => [p.id, p.section]));

/** `watch.prefix`: names joined by single slashes, nothing a run name could not show on one line. */
const RUN_PREFIX = /^(?:[^/\s\p{Cc}]+(?:\/[^/\s\p{Cc}]+)*)?$/u;
const RUN_PREFIX_EXPECTED = 'a name like gpu-a or site/gpu-a: no spaces, no leading, trailing or double /';

/** rlwatch.yaml. Unknown keys are errors: a typo must not silently fall back to a default. */
export const ConfigSchema = z
  .object({
    /** SQLite file; `--db` and RLWATCH_DB take precedence. Relative to the config file. */
    db: z.string().min(1).optional(),
    watch: z
      .object({
        /** directories whose sub-directories holding logs are runs; relative to the config file */
        roots: z.array(z.string().min(1)).default([]),
        /** poll instead of fs events: NFS, Lustre and other network file systems send no events */
        poll: z.boolean().default(false),
        pollIntervalMs: z.number().int().min(100).default(2000),
        /** extra glob-free path fragments to ignore (dot-directories and node_modules always are) */
        ignore: z.array(z.string().min(1)).default([]),
        /** how deep below a root to look for runs */
        depth: z.number().int().min(0).max(32).default(8),
        /** run names made from folders are `<prefix>/<name>`, so that hosts sharing one PostgreSQL never meet in one
         * run; unset: none on SQLite, the host's name on PostgreSQL (src/store/open.ts `runPrefix`); "" for none */
        prefix: z.string().max(100).regex(RUN_PREFIX, RUN_PREFIX_EXPECTED).optional(),
      })
      .strict()
      .prefault({}),
    ingest: z
      .object({
        /** longer lines are skipped and counted, never held in memory whole */
        maxLineBytes: z.number().int().min(1024).default(8 * 1024 * 1024),
        /** best and worst generations kept per step */
        examplesPerStep: z.number().int().min(0).max(50).default(2),
      })
      .strict()
      .prefault({}),
    // each platform's section, by its id (src/platforms/index.ts)
    ...platformSections,
    alerts: z
      .object({
        /** the built-in rules: `grpo` (see README) or `none` */
        preset: z.enum(['grpo', 'none']).default('grpo'),
        /** how often a firing, unacknowledged alert is announced again */
        repeatInterval: z
          .string()
          .refine((s) => parseDuration(s) !== undefined, { message: DURATION_EXPECTED })
          .default('4h'),
        /** rules to add, and changes to preset rules (by id; with `runs`, for matching runs only) */
        rules: z.array(z.unknown()).default([]),
      })
      .strict()
      .prefault({}),
    /** `run report` (issue 12): expected ranges replacing or adding to the preset's (src/report/ranges.ts) */
    report: z
      .object({
        ranges: z
          .record(z.string().min(1), z.object({ min: z.number().optional(), max: z.number().optional() }).strict())
          .default({}),
        /** records in the report's window when no --since is given */
        window: z.number().int().min(2).default(50),
        /** a report is posted when a watched run reaches each of these epochs (`[]`: none) */
        milestones: z.array(z.number().positive()).default([0.5, 1]),
        /** the daily digest per channel at this time (HH:MM) of `digestZone`, or `off` */
        digest: z
          .string()
          .regex(/^(off|([01]\d|2[0-3]):[0-5]\d)$/, { message: 'expected HH:MM or off' })
          .default('09:00'),
        /** the IANA time zone of `digest` (Europe/Paris, America/New_York) */
        digestZone: z.string().refine(validZone, { message: 'expected an IANA time zone such as UTC or Europe/Paris' }).default('UTC'),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type Config = z.infer<typeof ConfigSchema>;

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
