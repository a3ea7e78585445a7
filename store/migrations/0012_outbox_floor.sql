-- outbox_unsent goes (docs/performance.md, "Fifth round: the outbox without
-- outbox_unsent"). SQLite's WAL writes every page a transaction changes in full, and this
-- partial index cost a page in the turn's commit (the reply's row enters it) and another
-- in the mark-sent (it leaves): two of a plain message's ten pages, for a list read every
-- 15 s. UnsentOutbox now scans the outbox by rowid from a floor, an id below which no row
-- is unsent (store/outbox_floor.go); PruneOutbox keeps the newest row, so a new row's id
-- is always above every id committed before it, in this process or another.
DROP INDEX outbox_unsent;
