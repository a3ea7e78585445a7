-- outbox_unsent goes: SQLite's WAL writes every page a transaction changes in full, and
-- this partial index costs a page in a reply's commit and another in its mark-sent.
-- 0015 creates it again, keyed by id, and UnsentOutbox reads it.
DROP INDEX outbox_unsent;
