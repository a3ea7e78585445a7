package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// TestSoakKill's Slack is killSlack (slack_kill_test.go): every envelope is delivered
// until it is acknowledged. These are the soak's ways of using it: DMs from several
// people, and counting the answers.

// soakMessage queues a DM from person dm.
func (f *killSlack) soakMessage(dm int, text string) {
	f.mu.Lock()
	n := len(f.envs) + 1
	f.mu.Unlock()
	ts := fmt.Sprintf("1800000000.%06d", n)
	inner, _ := json.Marshal(map[string]any{"type": "message", "channel_type": "im", "user": fmt.Sprintf("U0SOAK%d", dm),
		"text": text, "ts": ts, "channel": fmt.Sprintf("D0SOAK%d", dm), "event_ts": ts})
	f.queue(fmt.Sprintf("env-soak-%d", n), fmt.Sprintf("EvSOAK%d", n), string(inner))
}

// drained reports whether every envelope was acknowledged.
func (f *killSlack) drained() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.envs {
		if !f.acks[e.id] {
			return false
		}
	}
	return true
}

// soakCount counts the posts whose text, with a newline added, contains sub.
func (f *killSlack) soakCount(sub string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.posts {
		if strings.Contains(p+"\n", sub) {
			n++
		}
	}
	return n
}

// soakGens lists the connections whose process posted a text containing sub (with a
// newline added), for the report of a duplicate.
func (f *killSlack) soakGens(sub string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for i, p := range f.posts {
		if strings.Contains(p+"\n", sub) {
			out = append(out, f.postGens[i])
		}
	}
	return out
}
