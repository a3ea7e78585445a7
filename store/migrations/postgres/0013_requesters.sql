-- As SQLite's 0013: requesters, a JSON array of {"by", "name"}, replaces requested_by.
-- Guarded by the old column, so running it again (tests rewind schema_migrations to
-- replay older migrations) changes nothing.
DO $$
BEGIN
	IF EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'sessions' AND column_name = 'requested_by') THEN
		ALTER TABLE sessions ADD COLUMN requesters TEXT;
		UPDATE sessions SET requesters = json_build_array(json_build_object('by', requested_by))::text WHERE requested_by <> '';
		ALTER TABLE sessions DROP COLUMN requested_by;
		ALTER TABLE plans ADD COLUMN requesters TEXT;
		UPDATE plans SET requesters = json_build_array(json_build_object('by', requested_by))::text WHERE requested_by <> '';
		ALTER TABLE plans DROP COLUMN requested_by;
	END IF;
END $$;
