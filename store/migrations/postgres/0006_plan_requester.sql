-- Who asked for a plan version and who edited it (see ../0006_plan_requester.sql).
ALTER TABLE plans ADD COLUMN requested_by TEXT NOT NULL DEFAULT '';
ALTER TABLE plans ADD COLUMN edited_by TEXT NOT NULL DEFAULT '';
