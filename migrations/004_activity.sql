-- When rlwatch itself last saw a file, and so its run, grow: stall and crash rules measure silence on
-- this clock, never on file mtimes (an NFS/Lustre server's clock may be minutes off).
ALTER TABLE runs ADD COLUMN active_at INTEGER;
ALTER TABLE files ADD COLUMN grew_at INTEGER;
