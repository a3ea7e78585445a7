package core

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// resumeWindow bounds how old an unanswered message may be for Resume to answer it: after
// a long outage, a reply to a stale question would surprise more than help.
const resumeWindow = time.Hour

// Resume picks up work that a killed process left unfinished, so nothing a person was told
// about is lost: a session with injections still queued (a decision was committed but the
// agent turn it started never ran) gets that turn, and a session whose newest transcript
// entry is a person's recent message that was never answered gets an answer. only selects
// the sessions this process serves (nil = all). Resume returns how many sessions it picked
// up once their turns have run.
func (e *Engine) Resume(ctx context.Context, only func(Session) bool) (int, error) {
	ss, err := e.d.Store.Sessions(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing sessions to resume: %w", err)
	}
	var wg sync.WaitGroup
	n := 0
	for _, s := range ss {
		if only != nil && !only(s) {
			continue
		}
		need, err := e.unfinished(ctx, s)
		if err != nil {
			return n, err
		}
		if !need {
			continue
		}
		n++
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.system(ctx, s.ID, func(ctx context.Context, t *turnState) error {
				if need, err := e.unfinished(ctx, t.sess); err != nil || !need {
					return err // someone was quicker
				}
				t.notice(ctx, "plangate restarted: picking up where it stopped.")
				return t.runTurns(ctx)
			})
			if err != nil {
				e.d.Log.Error("resuming session", "session", s.ID, "err", err)
			}
		}()
	}
	wg.Wait()
	return n, nil
}

func (e *Engine) unfinished(ctx context.Context, s Session) (bool, error) {
	if len(s.Injections) > 0 {
		return true, nil
	}
	last, err := e.d.Store.Transcript(ctx, s.ID, 1)
	if err != nil {
		return false, fmt.Errorf("reading the transcript of %s: %w", s.ID, err)
	}
	if len(last) != 1 || last[0].Role != RoleUser {
		return false, nil
	}
	return e.d.Now().Sub(last[0].At) < resumeWindow, nil
}
