-- run holds what plangate records about a plan version while carrying it out (why its
-- execution stopped, ...) as a JSON object, NULL when nothing is recorded.
ALTER TABLE plans ADD COLUMN run TEXT CHECK (run IS NULL OR json_valid(run));
