package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/plangate/plangate/core/mcp"
)

func TestConfigValidate(t *testing.T) {
	cmd := []string{"srv"}
	cases := []struct {
		name string
		cfg  mcp.Config
		want []string // substrings of the error; none = valid
	}{
		{"stdio and http", mcp.Config{{Name: "fs", Command: cmd, Env: map[string]string{"K": "v"}}, {Name: "web-2", URL: "https://x/mcp", Headers: map[string]string{"Authorization": "Bearer t"}}}, nil},
		{"empty name", mcp.Config{{Command: cmd}}, []string{"mcp[0].name is empty"}},
		{"bad name", mcp.Config{{Name: "Fs", Command: cmd}}, []string{`mcp[0].name is "Fs": may hold only a-z`}},
		{"double underscore", mcp.Config{{Name: "a__b", Command: cmd}}, []string{`mcp[0].name is "a__b"`}},
		// "a_" + "__" + "b" is "a___b", which reads as server "a", tool "_b": a call of the
		// one server's (read-only) tool would run the other's.
		{"trailing underscore", mcp.Config{{Name: "a", Command: cmd}, {Name: "a_", Command: cmd}}, []string{`mcp[1].name is "a_": may not end with "_"`}},
		{"duplicate", mcp.Config{{Name: "fs", Command: cmd}, {Name: "fs", URL: "http://x"}}, []string{`mcp[1].name is "fs": is also the name of mcp[0]`}},
		{"neither", mcp.Config{{Name: "fs"}}, []string{"mcp[0] needs exactly one of command (stdio) and url"}},
		{"both", mcp.Config{{Name: "fs", Command: cmd, URL: "http://x"}}, []string{"mcp[0] needs exactly one"}},
		{"bad url", mcp.Config{{Name: "fs", URL: "ftp://x"}}, []string{"mcp[0].url"}},
		{"args on url", mcp.Config{{Name: "fs", URL: "http://x", Args: []string{"-v"}}}, []string{"sets args, env or dir"}},
		{"headers on command", mcp.Config{{Name: "fs", Command: cmd, Headers: map[string]string{"A": "b"}}}, []string{"mcp[0].headers are for a url server only"}},
		{"negative timeout", mcp.Config{{Name: "fs", Command: cmd, CallTimeout: -time.Second}}, []string{"call_timeout is negative"}},
		{"empty override", mcp.Config{{Name: "fs", Command: cmd, DenyTools: []string{""}}}, []string{"empty tool name"}},
		{"trusted server", mcp.Config{{Name: "fs", Command: cmd, TrustReadOnly: true, DenyTools: []string{"rm"}}}, nil},
		{"vouched tools", mcp.Config{{Name: "fs", Command: cmd, ReadOnlyTools: []string{"stat", "read-file_2"}}}, nil},
		{"trust and list", mcp.Config{{Name: "fs", Command: cmd, TrustReadOnly: true, ReadOnlyTools: []string{"stat"}}},
			[]string{"mcp[0].read_only_tools is set together with trust_read_only: true", "keep one of them"}},
		{"prefixed tool name", mcp.Config{{Name: "fs", Command: cmd, ReadOnlyTools: []string{"fs__stat"}}},
			[]string{`mcp[0].read_only_tools[0] is "fs__stat": is not a tool name`, `without the "<server>__" prefix`}},
		{"tool name with a space", mcp.Config{{Name: "fs", Command: cmd, DenyTools: []string{"rm all"}}}, []string{`mcp[0].deny_tools[0] is "rm all"`}},
		{"vouched and denied", mcp.Config{{Name: "fs", Command: cmd, ReadOnlyTools: []string{"rm"}, DenyTools: []string{"rm"}}},
			[]string{`mcp[0].read_only_tools is "rm": is also in deny_tools`}},
		{"listed twice", mcp.Config{{Name: "fs", Command: cmd, ReadOnlyTools: []string{"stat", "stat"}}}, []string{`mcp[0].read_only_tools[1] is "stat": is listed twice`}},
		{"empty program", mcp.Config{{Name: "fs", Command: []string{" "}}}, []string{"empty program name"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("valid config refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid config accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDescribeHidesSecrets(t *testing.T) {
	cfg := mcp.Config{
		{Name: "fs", Command: []string{"srv", "--stdio"}, Args: []string{"-v"}, Env: map[string]string{"TOKEN": "env-secret"}, DenyTools: []string{"rm"}},
		{Name: "web", URL: "https://u:pw-secret@x.test/mcp?key=query-secret", Headers: map[string]string{"Authorization": "Bearer header-secret"}, CallTimeout: 5 * time.Second},
	}
	got := cfg.Describe()
	for _, secret := range []string{"env-secret", "pw-secret", "query-secret", "header-secret"} {
		if strings.Contains(got, secret) {
			t.Errorf("Describe shows %s:\n%s", secret, got)
		}
	}
	want := "fs: stdio srv --stdio -v, env TOKEN, call timeout 1m0s, read-only by operator: none, denied: rm\n" +
		"web: http https://x.test/mcp?…, headers Authorization (values hidden), call timeout 5s, read-only by operator: none"
	if got != want {
		t.Fatalf("Describe:\n%s\nwant\n%s", got, want)
	}
	if (mcp.Config{}).Describe() != "no MCP servers" {
		t.Error("an empty config describes itself wrongly")
	}
}
