-- 0008 is an index for the web follower (PostgreSQL only: postgres/0008_outbox_sent.sql).
-- The follower runs only where several replicas share a database; a SQLite file has one
-- process, so here the index would only cost a page write per reply marked sent.
SELECT 1;
