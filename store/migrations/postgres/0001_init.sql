-- 0001_init (PostgreSQL): the tables of ../0001_init.sql in PostgreSQL's types.
--
-- Times are TEXT in UTC, fixed width "2006-01-02T15:04:05.000000000Z", exactly as on SQLite,
-- so they round-trip to the nanosecond (timestamptz keeps microseconds) and a copy between
-- the engines is verbatim. Keys and times are COLLATE "C": they compare byte by byte like
-- SQLite's text, whatever the database's default collation, so ORDER BY and the time
-- comparisons (<, <=) mean the same on both engines.
-- JSON columns are TEXT checked by a cast; NULL means "none".

CREATE TABLE sessions (
    id              TEXT COLLATE "C" NOT NULL PRIMARY KEY CHECK (id <> ''),
    channel         TEXT COLLATE "C" NOT NULL DEFAULT '',
    account         TEXT COLLATE "C" NOT NULL DEFAULT '',
    chat            TEXT COLLATE "C" NOT NULL DEFAULT '',
    thread          TEXT COLLATE "C" NOT NULL DEFAULT '',
    phase           TEXT    NOT NULL
        CHECK (phase IN ('off', 'planning', 'awaiting_approval', 'executing')),
    auto_approve    BOOLEAN NOT NULL DEFAULT false,
    owner           TEXT    NOT NULL DEFAULT '',
    plan_id         TEXT COLLATE "C",       -- references plans (id), added below
    approval_id     TEXT COLLATE "C",
    rejection_count INTEGER NOT NULL DEFAULT 0 CHECK (rejection_count >= 0),
    last_feedback   TEXT    NOT NULL DEFAULT '',
    nudge_spec      TEXT    NOT NULL DEFAULT '',
    question        TEXT    CHECK (question IS NULL OR question::json IS NOT NULL),
    injections      TEXT    NOT NULL DEFAULT '[]' CHECK (injections::json IS NOT NULL),
    version         BIGINT  NOT NULL CHECK (version >= 1),
    created_at      TEXT COLLATE "C" NOT NULL,
    updated_at      TEXT COLLATE "C" NOT NULL
);

CREATE INDEX sessions_address ON sessions (channel, account, chat, thread);

CREATE TABLE messages (
    id           BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id   TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role         TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content      TEXT    NOT NULL DEFAULT '',
    tool_calls   TEXT    CHECK (tool_calls IS NULL OR tool_calls::json IS NOT NULL),
    tool_call_id TEXT    NOT NULL DEFAULT '',
    name         TEXT    NOT NULL DEFAULT '',
    at           TEXT COLLATE "C" NOT NULL
);

CREATE INDEX messages_session ON messages (session_id, id);

CREATE TABLE plans (
    id          TEXT COLLATE "C" NOT NULL PRIMARY KEY CHECK (id <> ''),
    session_id  TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL CHECK (version >= 1),
    status      TEXT    NOT NULL CHECK (status IN ('pending', 'superseded', 'accepted',
        'revised', 'abandoned', 'aborted', 'expired', 'completed')),
    approval_id TEXT COLLATE "C" UNIQUE CHECK (approval_id IS NULL OR approval_id <> ''),
    body        TEXT    NOT NULL CHECK (body::json IS NOT NULL),
    hash        TEXT    NOT NULL DEFAULT '',
    file        TEXT    NOT NULL DEFAULT '',
    decision    TEXT    CHECK (decision IS NULL OR decision::json IS NOT NULL),
    created_at  TEXT COLLATE "C" NOT NULL,
    updated_at  TEXT COLLATE "C" NOT NULL,
    UNIQUE (session_id, version)
);

CREATE INDEX plans_created_at ON plans (created_at);

-- Deferred so a transition can point the session at a plan inserted later in the same
-- transaction (plans reference sessions, so the session row is written first).
ALTER TABLE sessions ADD CONSTRAINT sessions_plan_id_fkey
    FOREIGN KEY (plan_id) REFERENCES plans (id) DEFERRABLE INITIALLY DEFERRED;

-- The audit log; session_id is deliberately not a foreign key (see the SQLite schema).
CREATE TABLE plan_events (
    id           BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id   TEXT COLLATE "C" NOT NULL CHECK (session_id <> ''),
    plan_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    plan_version INTEGER NOT NULL DEFAULT 0,
    kind         TEXT    NOT NULL CHECK (kind <> ''),
    actor        TEXT    NOT NULL DEFAULT '',
    channel      TEXT    NOT NULL DEFAULT '',
    detail       TEXT    NOT NULL DEFAULT '',
    at           TEXT COLLATE "C" NOT NULL
);

CREATE INDEX plan_events_session ON plan_events (session_id, id);

CREATE TABLE nudges (
    id           BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id   TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    plan_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    kind         TEXT    NOT NULL CHECK (kind IN ('once', 'recurring')),
    action       TEXT    NOT NULL DEFAULT 'remind' CHECK (action IN ('remind', 'expire')),
    spec         TEXT    NOT NULL,
    next_fire_at TEXT COLLATE "C",
    fired        INTEGER NOT NULL DEFAULT 0 CHECK (fired >= 0),
    missed       INTEGER NOT NULL DEFAULT 0 CHECK (missed >= 0),
    status       TEXT    NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'done', 'cancelled')),
    created_at   TEXT COLLATE "C" NOT NULL
);

CREATE INDEX nudges_due ON nudges (next_fire_at) WHERE status = 'active';
CREATE INDEX nudges_session ON nudges (session_id, status);

-- The firing ledger: one row per (schedule, scheduled time), written in the transaction
-- that advances the schedule, so an occurrence fires once across every replica.
CREATE TABLE nudge_firings (
    nudge_id     BIGINT  NOT NULL REFERENCES nudges (id) ON DELETE CASCADE,
    scheduled_at TEXT COLLATE "C" NOT NULL,
    fired_at     TEXT COLLATE "C",
    outcome      TEXT    NOT NULL CHECK (outcome IN ('fired', 'missed')),
    recorded_at  TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (nudge_id, scheduled_at)
);

-- Platform event ids already handled, for de-duplication across replicas.
CREATE TABLE inbound (
    channel  TEXT COLLATE "C" NOT NULL,
    account  TEXT COLLATE "C" NOT NULL,
    event_id TEXT COLLATE "C" NOT NULL CHECK (event_id <> ''),
    at       TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (channel, account, event_id)
);

CREATE INDEX inbound_at ON inbound (at);

CREATE TABLE channel_state (
    channel    TEXT COLLATE "C" NOT NULL,
    account    TEXT COLLATE "C" NOT NULL,
    key        TEXT COLLATE "C" NOT NULL CHECK (key <> ''),
    value      TEXT NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (channel, account, key)
);
