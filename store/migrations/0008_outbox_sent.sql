-- The web follower on every replica polls the replies of its channel sent in the last
-- 30 s (Store.SentSince, ordered by sent_at, id). Without this index that poll read the
-- whole outbox and sorted what matched; with it, it is a range scan of one channel's
-- recent rows, already in order. Only sent rows are in it: the unsent have outbox_unsent.
CREATE INDEX outbox_sent ON outbox (channel, sent_at, id) WHERE sent_at IS NOT NULL;
