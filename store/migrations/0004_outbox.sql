-- The outbox: every reply is a row committed with the change that produced it. A sender
-- delivers it and marks it sent; after a restart, unsent rows are delivered (or dropped
-- with a reason when too old), so a reply is never lost between commit and platform.
CREATE TABLE outbox (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT    NOT NULL,
    channel     TEXT    NOT NULL,
    reply       TEXT    NOT NULL, -- core.Reply as JSON
    created_at  TEXT    NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    sent_at     TEXT,
    platform_id TEXT    NOT NULL DEFAULT '',
    dropped     TEXT    NOT NULL DEFAULT ''   -- why it was given up ('' = not dropped)
);
CREATE INDEX outbox_unsent ON outbox (channel, id) WHERE sent_at IS NULL AND dropped = '';
