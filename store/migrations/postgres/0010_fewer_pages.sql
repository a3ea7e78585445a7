-- 0010 is SQLite's (../0010_fewer_pages.sql): pages written per message, which are a
-- property of SQLite's WAL. PostgreSQL keeps its index on inbound (at) for the prune,
-- and its channel_state has no WITHOUT ROWID form to undo.
SELECT 1;
