-- Who started the session's current planning (DESIGN.md 12), as "channel:user id": the
-- person whose message or /plan on entered plan mode. Each version proposed in that
-- planning is stamped with it (plans.requested_by); empty when no person did.
ALTER TABLE sessions ADD COLUMN requested_by TEXT NOT NULL DEFAULT '';
