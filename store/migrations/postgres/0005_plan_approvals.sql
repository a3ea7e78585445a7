-- The approvals a plan version has collected under an N-of-M policy (DESIGN.md 12): a JSON
-- list of {by, by_name, at, version}, NULL while none (see ../0005_plan_approvals.sql).
ALTER TABLE plans ADD COLUMN approvals TEXT CHECK (approvals IS NULL OR approvals::json IS NOT NULL);
