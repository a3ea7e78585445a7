package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plangate/plangate/core/access"
	"github.com/plangate/plangate/core/conf"
)

// Bounds of access.rate_limit: over maxPerMinute a person's limit no longer holds back
// a flood; a burst over maxBurst is no limit at all.
const (
	maxPerMinute = 6000
	maxBurst     = 1000
)

// talkProblems checks allowed_users, unlisted_channels and rate_limit.
func (a AccessConfig) talkProblems() []error {
	var errs []error
	seen := map[string]int{}
	for i, s := range a.AllowedUsers {
		key := fmt.Sprintf("allowed_users[%d]", i)
		if !validApprover(s) {
			errs = append(errs, conf.BadValue(key, s, "%s", approverHint(nil)))
			continue
		}
		if j, dup := seen[s]; dup {
			errs = append(errs, conf.Invalid(key, "names %q again (so does allowed_users[%d]): remove one", s, j))
			continue
		}
		seen[s] = i
	}
	if err := conf.OneOf("unlisted_channels", string(a.UnlistedChannels), string(access.UnlistedOpen), string(access.UnlistedClosed)); err != nil {
		errs = append(errs, err)
	} else if a.UnlistedChannels == access.UnlistedClosed && len(a.AllowedUsers) == 0 && len(a.allApprovers()) == 0 {
		errs = append(errs, conf.Invalid("unlisted_channels", "is closed, but neither allowed_users nor approvers list anyone: nobody but the terminal's operator and the admin API could talk to the bot; list people in allowed_users, or set unlisted_channels: open"))
	}
	if n := a.RateLimit.PerMinute; n < 0 || n > maxPerMinute {
		errs = append(errs, conf.Invalid("rate_limit.per_minute", "is %d: it must be between 0 (no limit) and %d messages a minute per person", n, maxPerMinute))
	}
	if n := a.RateLimit.Burst; n < 1 || n > maxBurst {
		errs = append(errs, conf.Invalid("rate_limit.burst", "is %d: it must be between 1 and %d (messages a person may send at once; default %d)", n, maxBurst, defaultBurst))
	}
	return errs
}

// allApprovers are access.approvers and every policy's approvers, each once.
func (a AccessConfig) allApprovers() []string {
	all := slices.Clone(a.Approvers)
	for _, p := range a.Policies {
		all = append(all, p.Approvers...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// rules are the access section as the engine's gate enforces it.
func (a AccessConfig) rules() access.Rules {
	var listed []string
	for _, s := range a.AllowedUsers {
		kind, _, _ := strings.Cut(s, ":")
		for _, r := range channelTable {
			if (kind == r.name || r.roleKind != "" && kind == r.roleKind) && !slices.Contains(listed, r.name) {
				listed = append(listed, r.name)
			}
		}
	}
	return access.Rules{
		AllowedUsers: a.AllowedUsers, Listed: listed, Unlisted: a.UnlistedChannels, Approvers: a.allApprovers(),
		PerMinute: a.RateLimit.PerMinute, Burst: a.RateLimit.Burst,
	}
}

// describeTalk summarises who may talk and how much for `plangate config check`.
func (a AccessConfig) describeTalk() string {
	var who string
	r := a.rules()
	switch {
	case len(r.Listed) == 0 && a.UnlistedChannels != access.UnlistedClosed:
		who = "anyone"
	case len(r.Listed) == 0:
		who = "approvers only, on every channel"
	default:
		rest := "everyone elsewhere"
		if a.UnlistedChannels == access.UnlistedClosed {
			rest = "approvers only elsewhere"
		}
		who = fmt.Sprintf("%d listed and approvers on %s; %s", len(a.AllowedUsers), strings.Join(r.Listed, ", "), rest)
	}
	limit := "no rate limit"
	if n := a.RateLimit.PerMinute; n > 0 {
		limit = fmt.Sprintf("%d messages a minute per person, %d at once", n, a.RateLimit.Burst)
	}
	return who + "; " + limit
}
