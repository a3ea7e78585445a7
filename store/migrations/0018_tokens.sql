-- Model tokens (docs/design.md §10): a session's counts as one JSON object written with its
-- row (all calls, the day's, the plan work's not yet on a version), NULL when none; a plan
-- version's as integer columns, which a commit adds to in place so that writing the
-- plan's row never carries an older count.
ALTER TABLE sessions ADD COLUMN tokens TEXT CHECK (tokens IS NULL OR json_valid(tokens));
ALTER TABLE plans ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE plans ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE plans ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE plans ADD COLUMN model_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE plans ADD COLUMN unreported_calls INTEGER NOT NULL DEFAULT 0;
