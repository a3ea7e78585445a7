-- 0004 (PostgreSQL): the outbox, as in ../0004_outbox.sql.
CREATE TABLE outbox (
    id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  TEXT COLLATE "C" NOT NULL,
    channel     TEXT COLLATE "C" NOT NULL,
    reply       TEXT    NOT NULL, -- core.Reply as JSON
    created_at  TEXT COLLATE "C" NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    sent_at     TEXT COLLATE "C",
    platform_id TEXT    NOT NULL DEFAULT '',
    dropped     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX outbox_unsent ON outbox (channel, id) WHERE sent_at IS NULL AND dropped = '';
