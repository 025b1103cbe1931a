-- Scheduled reports: which milestone reports and daily digests were sent (or passed over), so that
-- each goes once. run_id 0 is the digest (every run of a channel).
CREATE TABLE report_marks (
  run_id  INTEGER NOT NULL,
  mark    TEXT NOT NULL,              -- 'epoch:0.5', 'digest:2026-11-22'
  at      INTEGER NOT NULL,
  PRIMARY KEY (run_id, mark)
) WITHOUT ROWID;
