-- 0011 (PostgreSQL): outbox_unsent keyed by id (docs/performance.md, "Fourth round: two
-- replicas on PostgreSQL").
--
-- The outbox bookkeeping (MarkSent, DropOutbox, ClaimOutbox) finds its row with
-- "id = ? AND sent_at IS NULL AND dropped = ''", which implies this index's predicate, and
-- the planner prefers the partial index, which it believes holds a few unsent rows, to
-- the primary key. Keyed (channel, id) the id bounded nothing there: every mark read every
-- entry of the index, and a reply marked sent leaves its entry behind until a vacuum (the
-- mark rejects it on the key without visiting the heap, so it is never flagged dead
-- either). After 9,000 replies a mark read 40 pages and took 0.25-0.6 ms of the server's
-- CPU, three times per decision. Keyed by id the mark is a one-entry lookup, and
-- UnsentOutbox, which lists in id order, reads the index in its order and filters the
-- channel (unsent rows are the few not yet delivered).
DROP INDEX outbox_unsent;
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL AND dropped = '';
