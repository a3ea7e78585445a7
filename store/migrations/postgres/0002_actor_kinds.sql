-- 0002 (PostgreSQL): audit actors get a kind, as in ../0002_actor_kinds.sql. A database
-- created by this plangate has no old rows; the statement keeps the two histories equal
-- for a database copied from SQLite at schema version 1.
UPDATE plan_events SET actor = CASE
    WHEN actor IN ('', 'agent', 'system') THEN actor
    WHEN actor = 'auto' THEN 'rule:auto'
    ELSE 'person:' || actor
END;
