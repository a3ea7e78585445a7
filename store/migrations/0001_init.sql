-- 0001_init: plangate's initial schema.
--
-- Times are TEXT in UTC, fixed width "2006-01-02T15:04:05.000000000Z", so they round-trip
-- to the nanosecond and compare correctly as strings (ORDER BY, <, >).
-- JSON columns are checked with json_valid; NULL means "none".

CREATE TABLE sessions (
    id              TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
    channel         TEXT    NOT NULL DEFAULT '',
    account         TEXT    NOT NULL DEFAULT '',
    chat            TEXT    NOT NULL DEFAULT '',
    thread          TEXT    NOT NULL DEFAULT '',
    phase           TEXT    NOT NULL
        CHECK (phase IN ('off', 'planning', 'awaiting_approval', 'executing')),
    auto_approve    INTEGER NOT NULL DEFAULT 0 CHECK (auto_approve IN (0, 1)),
    owner           TEXT    NOT NULL DEFAULT '',
    -- Deferred so a transition can point the session at a plan inserted later in the
    -- same transaction (plans reference sessions, so the session row is written first).
    plan_id         TEXT    REFERENCES plans (id) DEFERRABLE INITIALLY DEFERRED,
    approval_id     TEXT,
    rejection_count INTEGER NOT NULL DEFAULT 0 CHECK (rejection_count >= 0),
    last_feedback   TEXT    NOT NULL DEFAULT '',
    nudge_spec      TEXT    NOT NULL DEFAULT '',  -- /plan nudge: '' = configured, 'off', or a cron spec
    question        TEXT    CHECK (question IS NULL OR json_valid(question)),
    injections      TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(injections)),
    version         INTEGER NOT NULL CHECK (version >= 1),
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL
);

-- Not unique: the session id is derived from the address, and tests create sessions freely.
CREATE INDEX sessions_address ON sessions (channel, account, chat, thread);

-- messages and plan_events use plain rowid ids, not AUTOINCREMENT: rows are never deleted
-- from the end, and AUTOINCREMENT would add a page write (sqlite_sequence) to every commit.
CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role         TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content      TEXT    NOT NULL DEFAULT '',
    tool_calls   TEXT    CHECK (tool_calls IS NULL OR json_valid(tool_calls)),
    tool_call_id TEXT    NOT NULL DEFAULT '',
    name         TEXT    NOT NULL DEFAULT '',
    at           TEXT    NOT NULL
);

CREATE INDEX messages_session ON messages (session_id, id);

CREATE TABLE plans (
    id          TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
    session_id  TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL CHECK (version >= 1),
    status      TEXT    NOT NULL CHECK (status IN ('pending', 'superseded', 'accepted',
        'revised', 'abandoned', 'aborted', 'expired', 'completed')),
    -- NULL when a version has no approval id, so UNIQUE only binds real ids.
    approval_id TEXT    UNIQUE CHECK (approval_id IS NULL OR approval_id <> ''),
    body        TEXT    NOT NULL CHECK (json_valid(body)),
    hash        TEXT    NOT NULL DEFAULT '',
    file        TEXT    NOT NULL DEFAULT '',
    decision    TEXT    CHECK (decision IS NULL OR json_valid(decision)),
    created_at  TEXT    NOT NULL,
    updated_at  TEXT    NOT NULL,
    UNIQUE (session_id, version)
);

CREATE INDEX plans_created_at ON plans (created_at);

-- The audit log. session_id is deliberately not a foreign key: a refusal may be recorded
-- for a conversation that has no stored session, and audit rows must never block a write.
CREATE TABLE plan_events (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT    NOT NULL CHECK (session_id <> ''),
    plan_id      TEXT    NOT NULL DEFAULT '',
    plan_version INTEGER NOT NULL DEFAULT 0,
    kind         TEXT    NOT NULL CHECK (kind <> ''),
    actor        TEXT    NOT NULL DEFAULT '',
    channel      TEXT    NOT NULL DEFAULT '',
    detail       TEXT    NOT NULL DEFAULT '',
    at           TEXT    NOT NULL
);

CREATE INDEX plan_events_session ON plan_events (session_id, id);

-- Nudge schedules: one row per schedule, with the next time it is due.
CREATE TABLE nudges (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    plan_id      TEXT    NOT NULL DEFAULT '',
    kind         TEXT    NOT NULL CHECK (kind IN ('once', 'recurring')),
    action       TEXT    NOT NULL DEFAULT 'remind' CHECK (action IN ('remind', 'expire')),
    spec         TEXT    NOT NULL,
    next_fire_at TEXT,                      -- NULL once nothing is due any more
    fired        INTEGER NOT NULL DEFAULT 0 CHECK (fired >= 0),
    missed       INTEGER NOT NULL DEFAULT 0 CHECK (missed >= 0),
    status       TEXT    NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'done', 'cancelled')),
    created_at   TEXT    NOT NULL
);

CREATE INDEX nudges_due ON nudges (next_fire_at) WHERE status = 'active';
CREATE INDEX nudges_session ON nudges (session_id, status);

-- The firing ledger: one row per (schedule, scheduled time), written in the transaction that
-- advances the schedule, so a nudge fires at most once even across restarts and when two
-- processes share the file. fired_at is NULL for an occurrence recorded as missed;
-- recorded_at is when the row was written either way.
CREATE TABLE nudge_firings (
    nudge_id     INTEGER NOT NULL REFERENCES nudges (id) ON DELETE CASCADE,
    scheduled_at TEXT    NOT NULL,
    fired_at     TEXT,
    outcome      TEXT    NOT NULL CHECK (outcome IN ('fired', 'missed')),
    recorded_at  TEXT    NOT NULL,
    PRIMARY KEY (nudge_id, scheduled_at)
) WITHOUT ROWID;

-- Platform event ids already handled, for de-duplication; pruned after a while.
CREATE TABLE inbound (
    channel  TEXT NOT NULL,
    account  TEXT NOT NULL,
    event_id TEXT NOT NULL CHECK (event_id <> ''),
    at       TEXT NOT NULL,
    PRIMARY KEY (channel, account, event_id)
) WITHOUT ROWID;

CREATE INDEX inbound_at ON inbound (at);

-- Small per-channel values that must survive restarts (e.g. the Telegram update offset).
CREATE TABLE channel_state (
    channel    TEXT NOT NULL,
    account    TEXT NOT NULL,
    key        TEXT NOT NULL CHECK (key <> ''),
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (channel, account, key)
) WITHOUT ROWID;
