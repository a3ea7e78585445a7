package pgtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A stalled server answers nothing on a connection opened before the stall (its backend
// is stopped too, not only the postmaster) nor to a new connection, and after Resume both
// work again; Stop ends a stalled server.
func TestStallResume(t *testing.T) {
	srv := Own(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	query := func(c *pgx.Conn, wait time.Duration) error {
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		var n int
		return c.QueryRow(ctx, "SELECT 1").Scan(&n)
	}
	if err := query(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stall(); err != nil {
		t.Fatal(err)
	}
	// A stopped server can only be shown by a wait that ends without an answer; 300 ms
	// is far longer than a local query takes.
	if err := query(c, 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a query on an open connection during the stall: %v, want it to wait", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if c2, err := pgx.Connect(wctx, srv.DSN()); err == nil {
		c2.Close(ctx)
		t.Error("a new connection was answered during the stall")
	}
	cancel()
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	c3, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatalf("connecting after Resume: %v", err)
	}
	defer c3.Close(ctx)
	if err := query(c3, 10*time.Second); err != nil {
		t.Errorf("a query after Resume: %v", err)
	}
	if err := srv.Stall(); err != nil {
		t.Fatal(err)
	}
	// Own's cleanup stops the stalled server.
}
