-- 0019 (PostgreSQL): the index of the waiting sessions, as in ../0019_sessions_waiting.sql.
CREATE INDEX IF NOT EXISTS sessions_waiting ON sessions (updated_at) WHERE phase = 'awaiting_approval' OR question IS NOT NULL;
