-- Watchers on several hosts write one database: two hosts may both have /data/runs/grpo-7/train.log.
-- A run belongs to a scope (the watcher's run prefix, `watch.prefix`: the host name unless configured; '' for what
-- `rlwatch migrate` copies from SQLite and for the store contract), and runs, files and unread files are unique by
-- path within their scope only. A file's scope is its run's, kept on its row so that a watcher finds its files by
-- path with one index.
ALTER TABLE runs ADD COLUMN scope text NOT NULL DEFAULT '';
ALTER TABLE runs DROP CONSTRAINT runs_path_key;
ALTER TABLE runs ADD CONSTRAINT runs_scope_path_key UNIQUE (scope, path);

ALTER TABLE files ADD COLUMN scope text NOT NULL DEFAULT '';
ALTER TABLE files DROP CONSTRAINT files_path_key;
ALTER TABLE files ADD CONSTRAINT files_scope_path_key UNIQUE (scope, path);

ALTER TABLE unread_files ADD COLUMN scope text NOT NULL DEFAULT '';
ALTER TABLE unread_files DROP CONSTRAINT unread_files_pkey;
ALTER TABLE unread_files ADD PRIMARY KEY (scope, path);
