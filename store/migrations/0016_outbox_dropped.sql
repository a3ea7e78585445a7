-- outbox_dropped: the partial index of the replies given up (dropped != ''), keyed by id,
-- so the admin API lists the newest drops without reading the table. A row enters it only
-- when it is dropped, so a delivered reply's commit and mark-sent cost nothing more.
CREATE INDEX IF NOT EXISTS outbox_dropped ON outbox (id) WHERE dropped != '';
