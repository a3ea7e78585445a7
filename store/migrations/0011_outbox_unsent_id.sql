-- 0011 is PostgreSQL's (postgres/0011_outbox_unsent_id.sql): its planner took the partial
-- index outbox_unsent (channel, id) for a lookup by id. SQLite finds a row by its rowid.
SELECT 1;
