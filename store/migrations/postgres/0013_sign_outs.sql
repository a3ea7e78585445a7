-- 0013 (PostgreSQL): web sign-outs, as in ../0013_sign_outs.sql.
CREATE TABLE IF NOT EXISTS sign_outs (
    nonce TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    until TEXT COLLATE "C" NOT NULL
);
