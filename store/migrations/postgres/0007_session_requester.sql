-- Who started the session's current planning (see ../0007_session_requester.sql).
ALTER TABLE sessions ADD COLUMN requested_by TEXT NOT NULL DEFAULT '';
