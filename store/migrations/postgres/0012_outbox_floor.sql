-- 0012 is SQLite's (../0012_outbox_floor.sql): pages written per message, a property of
-- SQLite's WAL. PostgreSQL keeps outbox_unsent (keyed by id since its 0011), which the
-- bookkeeping's lookups by id and UnsentOutbox use, and its ids come from a sequence.
SELECT 1;
