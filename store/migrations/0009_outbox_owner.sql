-- Who committed each reply: the engine's owner id ("<host>/<pid>/<random>"). With several
-- replicas, the replies a live replica committed and has not sent yet are its own to
-- send; another replica's start-up or takeover delivers only the rows of owners that are
-- gone. '' (rows from before this column) counts as gone.
ALTER TABLE outbox ADD COLUMN owner TEXT NOT NULL DEFAULT '';
