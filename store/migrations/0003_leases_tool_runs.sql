-- Leases: who may do a piece of work now. A session's turns run only in the process
-- holding "session:<id>"; later, a poller election uses the same table. A lease ends when
-- its holder releases it or when expires_at passes without a renewal.
CREATE TABLE leases (
    name       TEXT NOT NULL PRIMARY KEY,
    owner      TEXT NOT NULL,
    expires_at TEXT NOT NULL
) WITHOUT ROWID;

-- Mutating tool calls, recorded as started (durably) before they run and as finished
-- after, so a call interrupted by a crash is never run again on resume: its effects are
-- unknown, and the agent and the chat are told so.
CREATE TABLE tool_runs (
    session_id  TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    detail      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    outcome     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, call_id)
) WITHOUT ROWID;
