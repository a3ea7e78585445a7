-- 0003 (PostgreSQL): leases and tool runs, as in ../0003_leases_tool_runs.sql.
CREATE TABLE leases (
    name       TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    owner      TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE tool_runs (
    session_id  TEXT COLLATE "C" NOT NULL,
    call_id     TEXT COLLATE "C" NOT NULL,
    tool        TEXT NOT NULL,
    detail      TEXT NOT NULL,
    started_at  TEXT COLLATE "C" NOT NULL,
    finished_at TEXT COLLATE "C",
    outcome     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, call_id)
);
