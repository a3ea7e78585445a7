-- 0008 (PostgreSQL): the index of the web follower's poll, as in ../0008_outbox_sent.sql.
CREATE INDEX outbox_sent ON outbox (channel, sent_at, id) WHERE sent_at IS NOT NULL;
