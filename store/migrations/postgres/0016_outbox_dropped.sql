-- 0016 (PostgreSQL): the index of the replies given up, as in ../0016_outbox_dropped.sql.
CREATE INDEX IF NOT EXISTS outbox_dropped ON outbox (id) WHERE dropped != '';
