/** Operational messages go to stderr (stdout is for answers and --json), one timestamped line each. */
export interface Log {
  info(msg: string): void;
  warn(msg: string): void;
}

export const stderrLog: Log = {
  info: (msg) => process.stderr.write(`${stamp()} ${msg}\n`),
  warn: (msg) => process.stderr.write(`${stamp()} warning: ${msg}\n`),
};

export const silentLog: Log = { info: () => {}, warn: () => {} };

const stamp = (): string => new Date().toISOString().slice(11, 19);
