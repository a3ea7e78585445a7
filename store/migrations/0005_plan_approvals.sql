-- The approvals a plan version has collected under an N-of-M policy (DESIGN.md 12): a JSON
-- list of {by, by_name, at, version}, NULL while none. It is kept outside the body, which
-- is the model's proposal and is hashed.
ALTER TABLE plans ADD COLUMN approvals TEXT;
