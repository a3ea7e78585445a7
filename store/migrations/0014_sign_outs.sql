-- Web sign-outs: the nonce of every web sign-in cookie signed out, kept until the cookie
-- would have expired anyway. A cookie is self-contained (it survives a restart and works
-- on every replica), so its revocation has to be shared the same way; rows past until
-- are pruned. IF NOT EXISTS: tests that replay the migrations after 0010 on a migrated
-- database apply this one again.
CREATE TABLE IF NOT EXISTS sign_outs (
    nonce TEXT NOT NULL PRIMARY KEY,
    until TEXT NOT NULL
) WITHOUT ROWID;
