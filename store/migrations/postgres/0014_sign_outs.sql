-- 0014 (PostgreSQL): web sign-outs, as in ../0014_sign_outs.sql.
CREATE TABLE IF NOT EXISTS sign_outs (
    nonce TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    until TEXT COLLATE "C" NOT NULL
);
