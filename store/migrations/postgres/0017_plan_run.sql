-- 0017 (PostgreSQL): a plan version's run record, as in ../0017_plan_run.sql.
ALTER TABLE plans ADD COLUMN IF NOT EXISTS run TEXT CHECK (run IS NULL OR run::json IS NOT NULL);
