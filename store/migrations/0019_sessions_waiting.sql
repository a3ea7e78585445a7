-- sessions_waiting: the partial index of the sessions waiting for a person (a plan awaiting
-- approval or a question asked), so the dashboard reads those without reading every
-- session. A session enters it only while it waits.
CREATE INDEX IF NOT EXISTS sessions_waiting ON sessions (updated_at) WHERE phase = 'awaiting_approval' OR question IS NOT NULL;
