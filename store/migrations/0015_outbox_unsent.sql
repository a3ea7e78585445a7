-- outbox_unsent: the partial index of the replies not yet delivered, keyed by id, as
-- PostgreSQL's (postgres/0011_outbox_unsent_id.sql). UnsentOutbox reads it in id order
-- and filters the channel on its few rows, instead of the table. It costs a page in a
-- reply's commit (the row enters it) and another in its mark-sent (it leaves). IF NOT
-- EXISTS: tests that replay the migrations after 0010 on a migrated database apply this
-- one again.
CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox (id) WHERE sent_at IS NULL AND dropped = '';
