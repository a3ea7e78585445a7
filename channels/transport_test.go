package channels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/conf"
)

// libError is a library's typed answer, for checking that scrubbing keeps errors.As.
type libError struct{ code int }

func (e *libError) Error() string { return fmt.Sprintf("POST /botSECRET/send: %d", e.code) }

// testLane records what the retry loop does with a lane.
type testLane struct {
	mu      sync.Mutex
	waits   int
	blocked []time.Duration
}

func (l *testLane) Wait(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits++
	return nil
}

func (l *testLane) Block(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.blocked = append(l.blocked, d)
}

func testPolicy(logs *strings.Builder) Policy {
	return Policy{
		Platform: "test", Patience: Patience{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond},
		Classify: func(err error) error {
			var le *libError
			switch {
			case errors.As(err, &le) && le.code == 429:
				return RateLimited(time.Millisecond)
			case errors.As(err, &le) && le.code >= 500, Transient(err):
				return ErrTemporary
			}
			return ErrPermanent
		},
		Scrub: conf.Secrets("SECRET").Error,
		Log:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

func TestPolicyDo(t *testing.T) {
	tests := []struct {
		name      string
		answers   []error
		wantCalls int
		wantErr   string // "" = success
		wantBlock int    // lane blocks (rate limits)
	}{
		{name: "success", answers: []error{nil}, wantCalls: 1},
		{name: "rate limit waits and retries", answers: []error{&libError{429}, nil}, wantCalls: 2, wantBlock: 1},
		{name: "temporary retries", answers: []error{&libError{502}, io.ErrUnexpectedEOF, nil}, wantCalls: 3},
		{name: "permanent ends at once", answers: []error{&libError{400}}, wantCalls: 1, wantErr: "test send: POST /bot<token>/send: 400"},
		{
			name: "gives up after the attempts", answers: []error{&libError{502}, &libError{429}, &libError{502}, nil},
			wantCalls: 3, wantBlock: 1, wantErr: "test send: giving up after 3 attempts: POST /bot<token>/send: 502",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			lane := &testLane{}
			calls := 0
			err := testPolicy(&logs).Do(context.Background(), Call{Name: "send", Target: slog.Int64("chat", 7), Lane: lane}, func(context.Context) error {
				calls++
				return tt.answers[calls-1]
			})
			if calls != tt.wantCalls || lane.waits != calls || len(lane.blocked) != tt.wantBlock {
				t.Errorf("calls %d, lane waits %d, blocks %v; want %d calls, one wait each, %d blocks", calls, lane.waits, lane.blocked, tt.wantCalls, tt.wantBlock)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Do = %v, want success", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("Do = %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(logs.String(), "SECRET") {
				t.Errorf("the log shows the secret: %s", logs.String())
			}
			if l := logs.String(); tt.wantErr != "" && (!strings.Contains(l, "test request failed") || !strings.Contains(l, "chat=7")) {
				t.Errorf("the failure was not logged with its chat: %s", logs.String())
			}
			if err != nil {
				var le *libError
				if !errors.As(err, &le) || errors.Unwrap(errors.Unwrap(err)) != nil {
					t.Errorf("the returned error %v lost the library's type, or unwraps to the unscrubbed chain", err)
				}
			}
		})
	}
}

func TestPolicyQuietAndContext(t *testing.T) {
	var logs strings.Builder
	p := testPolicy(&logs)
	p.Quiet = func(name string, err error) bool { return name == "edit" }
	if err := p.Do(context.Background(), Call{Name: "edit"}, func(context.Context) error { return &libError{400} }); err == nil {
		t.Fatal("a permanent failure succeeded")
	}
	if strings.Contains(logs.String(), "request failed") {
		t.Errorf("a failure the caller handles was logged: %s", logs.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	err := p.Do(ctx, Call{Name: "send"}, func(context.Context) error { cancel(); return &libError{502} })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Do after its context ended = %v, want context.Canceled", err)
	}
}

func TestPolicyAttemptTime(t *testing.T) {
	var logs strings.Builder
	p := testPolicy(&logs)
	p.AttemptTime = time.Millisecond
	calls := 0
	err := p.Do(context.Background(), Call{Name: "slow"}, func(ctx context.Context) error {
		calls++
		if calls == 1 {
			<-ctx.Done() // one attempt times out; the caller's context does not
			return ctx.Err()
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Errorf("Do = %v after %d calls, want a timed-out attempt tried again", err, calls)
	}
}

func TestScrubberError(t *testing.T) {
	raw := fmt.Errorf("posting: %w", &libError{429})
	err := conf.Secrets("SECRET", "a b").Error(raw)
	if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "<token>") {
		t.Errorf("scrubbed to %q", err)
	}
	var le *libError
	if !errors.As(err, &le) || le.code != 429 || !errors.Is(err, raw) {
		t.Error("the library's error is not reachable after scrubbing")
	}
	if errors.Unwrap(err) != nil {
		t.Error("a scrubbed error hands out the original through Unwrap")
	}
	if again := conf.Secrets("other").Error(err); again != err {
		t.Error("scrubbing twice wrapped again")
	}
	if got := conf.Secrets("a b")("x a+b a%20b a b"); got != "x <token> <token> <token>" {
		t.Errorf("escaped forms scrubbed to %q", got)
	}
}

// Do's final error carries the classifier's verdict below the scrubbed text: a refusal
// matches core.ErrRefused, a last rate limit says its wait (core.SendDelay), a temporary
// failure neither; errors.As still reaches the library's error.
func TestPolicyDoErrorCarriesTheVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []error
		refused bool
		delay   time.Duration
	}{
		{"refused", []error{&libError{403}}, true, 0},
		{"rate limited last", []error{&libError{502}, &libError{502}, &libError{429}}, false, time.Millisecond},
		{"temporary last", []error{&libError{429}, &libError{502}, &libError{502}}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			i := 0
			err := testPolicy(&logs).Do(context.Background(), Call{Name: "send"}, func(context.Context) error {
				i++
				return tc.answers[i-1]
			})
			var le *libError
			if err == nil || !errors.As(err, &le) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("Do = %v; want the scrubbed library error", err)
			}
			if got := errors.Is(err, core.ErrRefused); got != tc.refused {
				t.Errorf("errors.Is(%v, core.ErrRefused) = %v, want %v", err, got, tc.refused)
			}
			if got := core.SendDelay(err); got != tc.delay {
				t.Errorf("SendDelay(%v) = %v, want %v", err, got, tc.delay)
			}
		})
	}
}
