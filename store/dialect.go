package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
)

// dialect is the SQL engine behind a Store. Every query is written once, with '?'
// placeholders and SQL both engines accept; the dialect renumbers the placeholders for
// PostgreSQL ($1, $2, ...), and the few places the engines differ branch on the driver.
type dialect struct {
	pg    bool
	cache *sync.Map // query text -> rebound text, PostgreSQL only
}

var (
	sqliteDialect   = dialect{}
	postgresDialect = dialect{pg: true, cache: new(sync.Map)}
)

// q returns query for this dialect. The queries of this package contain no '?' inside
// string literals or identifiers, so every '?' is a placeholder.
func (d dialect) q(query string) string {
	if !d.pg {
		return query
	}
	if v, ok := d.cache.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	out := b.String()
	// Queries built at run time (UnsentOutbox's IN list) are few distinct strings: the
	// list length is the only variable part, so the cache stays small.
	d.cache.Store(query, out)
	return out
}

// sqlDB is a *sql.DB that speaks its dialect: the methods below shadow the embedded ones so
// that the call sites read the same for both engines. Its transactions and connections
// (BeginTx, Conn) are database/sql's own: their few statements go through d.q themselves.
type sqlDB struct {
	*sql.DB
	d dialect
}

func (x sqlDB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return x.DB.ExecContext(ctx, x.d.q(q), args...)
}

func (x sqlDB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return x.DB.QueryContext(ctx, x.d.q(q), args...)
}

func (x sqlDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return x.DB.QueryRowContext(ctx, x.d.q(q), args...)
}
