-- Fewer pages written per message (docs/performance.md, "Fourth round"). SQLite's WAL
-- writes each page a transaction changes in full, so every b-tree a plain message's
-- writes touch costs a page.
--
-- inbound_at served only the hourly prune (DELETE ... WHERE at < ?), and cost a page in
-- every commit of a message; the prune now scans the table, which holds 48 h of keys.
DROP INDEX inbound_at;

-- channel_state becomes a rowid table. WITHOUT ROWID keeps a row in its key's b-tree,
-- whose pages hold a row of at most about a quarter page before the rest spills to
-- overflow pages (231 bytes at 1 KB pages, 1002 at 4 KB); a Telegram inbox record with a
-- pending update is larger, so each of a message's two saves wrote the row's page, an
-- overflow page and page 1 (the free list's count). A rowid table keeps up to the page
-- size less 35 bytes in the row's own page, and updating the value writes that page
-- alone: the key's index does not change. leases stays WITHOUT ROWID: its rows are
-- small, and a lease is inserted and deleted every turn, one b-tree instead of two.
CREATE TABLE channel_state_new (
    channel    TEXT NOT NULL,
    account    TEXT NOT NULL,
    key        TEXT NOT NULL CHECK (key <> ''),
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (channel, account, key)
);
INSERT INTO channel_state_new (channel, account, key, value, updated_at)
    SELECT channel, account, key, value, updated_at FROM channel_state;
DROP TABLE channel_state;
ALTER TABLE channel_state_new RENAME TO channel_state;
