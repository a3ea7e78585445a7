-- 0015 is SQLite's (../0015_outbox_unsent.sql): PostgreSQL has kept outbox_unsent, keyed
-- by id since its 0011.
SELECT 1;
