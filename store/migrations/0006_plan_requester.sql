-- Who asked for a plan version and who edited it (DESIGN.md 12, 13), as "channel:user id".
-- requested_by is the person whose message or /plan on started the planning that produced
-- the version; edited_by is set on a version a person wrote by editing the plan file. An
-- approval policy with requester_may_approve: false refuses both. Empty when unknown.
ALTER TABLE plans ADD COLUMN requested_by TEXT NOT NULL DEFAULT '';
ALTER TABLE plans ADD COLUMN edited_by TEXT NOT NULL DEFAULT '';
