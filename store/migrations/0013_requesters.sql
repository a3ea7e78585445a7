-- A plan version's requesters are everyone whose messages its planning answered (the
-- request, revisions, answers), not one person: requesters holds them as a JSON array of
-- {"by": "channel:user id", "name": ...}, NULL when none, on the session (the current plan
-- work) and on each version. The one requested_by a row had becomes its only requester.
ALTER TABLE sessions ADD COLUMN requesters TEXT;
UPDATE sessions SET requesters = json_array(json_object('by', requested_by)) WHERE requested_by <> '';
ALTER TABLE sessions DROP COLUMN requested_by;
ALTER TABLE plans ADD COLUMN requesters TEXT;
UPDATE plans SET requesters = json_array(json_object('by', requested_by)) WHERE requested_by <> '';
ALTER TABLE plans DROP COLUMN requested_by;
