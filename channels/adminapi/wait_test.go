package adminapi_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/channels/adminapi"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
)

// stuckEngine answers nothing until done is given a value: an engine busy elsewhere, or
// one that fails.
type stuckEngine struct{ done chan error }

func (s stuckEngine) Enqueue(context.Context, core.Message) <-chan error { return s.done }

// TestChangeWithoutAnAnswer: an engine that does not answer in time is 504 (the change
// may still happen), one that fails is 500 without its error text.
func TestChangeWithoutAnAnswer(t *testing.T) {
	e := newEnv(t, token)
	s := e.pending()
	body := `{"action":"accept","approval_id":"` + s.ApprovalID + `"}`
	path := "/api/v1/sessions/" + s.ID + "/decisions"

	e.withEngine(stuckEngine{done: make(chan error)}, time.Millisecond) // never answers
	if code, out, _ := e.do("POST", path, body); code != 504 || !strings.Contains(out, "still being handled") {
		t.Fatalf("no answer: %d %s", code, out)
	}
	failed := stuckEngine{done: make(chan error, 1)}
	failed.done <- errors.New("disk on fire at /secret/path")
	e.withEngine(failed, time.Hour)
	code, out, _ := e.do("POST", path, body)
	if code != 500 || strings.Contains(out, "secret") || !strings.Contains(out, "gateway log") {
		t.Fatalf("engine failure: %d %s", code, out)
	}
	if got := e.session(); got.Phase != core.PhaseAwaitingApproval || got.Version != s.Version {
		t.Fatalf("the session changed: %+v", got)
	}
}

// withEngine points e's requests at an API over eng instead of the real engine; the tap
// returned is the one the API waits on for answers.
func (e *env) withEngine(eng adminapi.Engine, wait time.Duration) *adminapi.Tap {
	hs := httpserver.New(httpserver.Config{AdminToken: token, MaxBody: 4096}, nil, nil)
	tap := adminapi.NewTap(e.chat)
	adminapi.New(adminapi.Deps{Store: e.st, Engine: eng, Tap: tap, Log: slog.New(slog.DiscardHandler),
		Wait: wait}).Register(hs)
	srv := httptest.NewServer(hs.Handler())
	e.t.Cleanup(srv.Close)
	e.srv = srv
	return tap
}
