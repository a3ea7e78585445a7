-- 0009 (PostgreSQL): the owner of each reply, as in ../0009_outbox_owner.sql.
ALTER TABLE outbox ADD COLUMN owner TEXT COLLATE "C" NOT NULL DEFAULT '';
