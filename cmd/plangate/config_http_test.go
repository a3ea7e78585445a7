package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/plangate/plangate/channels/httpserver"
)

func TestByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{
		"1MiB": 1 << 20, "512KiB": 512 << 10, "1048576": 1 << 20, "2048B": 2048, "1 GiB": 1 << 30, `"64KiB"`: 64 << 10,
	} {
		var got struct {
			V ByteSize `yaml:"v"`
		}
		if err := yaml.Unmarshal([]byte("v: "+in), &got); err != nil || got.V != want {
			t.Errorf("%s: got %d, %v; want %d", in, got.V, err, want)
		}
	}
	for _, in := range []string{"1MB", "1.5MiB", "-1KiB", "lots", "MiB", "99999999999GiB"} {
		var b ByteSize
		if err := b.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%s: read as %d, want an error", in, b)
		}
	}
	for b, want := range map[ByteSize]string{1 << 20: "1MiB", 1536: "1536B", 2048: "2KiB", 3 << 30: "3GiB", 0: "0B"} {
		if got := b.String(); got != want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", int64(b), got, want)
		}
	}
}

func TestHTTPConfigValues(t *testing.T) {
	body := "http:\n  listen: 127.0.0.1:0\n  public_url: https://bot.example.com/plangate\n  max_body: 512KiB\n"
	cfg, err := LoadConfig(writeConfig(t, body), env(map[string]string{"PLANGATE_ADMIN_TOKEN": "0123456789abcdef-admin"}))
	if err != nil {
		t.Fatal(err)
	}
	want := HTTPConfig{Listen: "127.0.0.1:0", PublicURL: "https://bot.example.com/plangate", AdminToken: "0123456789abcdef-admin", MaxBody: 512 << 10}
	if !reflect.DeepEqual(cfg.HTTP, want) {
		t.Errorf("http = %+v, want %+v", cfg.HTTP, want)
	}
	if s := cfg.HTTP.server(); s.MaxBody != 512<<10 || s.Listen != want.Listen || s.AdminToken != want.AdminToken || s.PublicURL != want.PublicURL {
		t.Errorf("server config = %+v", s)
	}
	got := cfg.Describe()
	if !strings.Contains(got, "http:      127.0.0.1:0, public https://bot.example.com/plangate, admin API on (token set, acting as admin:admin), max body 512KiB\n") {
		t.Errorf("Describe:\n%s", got)
	}
	if strings.Contains(got, "0123456789abcdef") {
		t.Errorf("Describe shows the admin token:\n%s", got)
	}
	for _, ok := range []string{":8080", "[::1]:8080", "localhost:9000"} {
		if _, err := LoadConfig(writeConfig(t, "http: {listen: \""+ok+"\", public_url: \"http://localhost:8080\"}\n"), env(nil)); err != nil {
			t.Errorf("listen %s with a loopback http public_url: %v", ok, err)
		}
	}
	def, err := LoadConfig(writeConfig(t, ""), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def.Describe(), "http:      off (http.listen is empty)\n") {
		t.Errorf("default Describe:\n%s", def.Describe())
	}
}

// TestHTTPAdminTokensNamed: named admin tokens reach the HTTP server with their names;
// config check names the operators, never the tokens.
func TestHTTPAdminTokensNamed(t *testing.T) {
	body := "http:\n  listen: 127.0.0.1:0\n  admin_token: \"\"\n  admin_tokens:\n    - {name: ops1, token: \"${OPS1_TOKEN}\"}\n    - {name: ci.bot, token: \"0123456789abcdef-ci\"}\n"
	cfg, err := LoadConfig(writeConfig(t, body), env(map[string]string{"OPS1_TOKEN": "0123456789abcdef-ops1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []httpserver.AdminToken{{Name: "ops1", Token: "0123456789abcdef-ops1"}, {Name: "ci.bot", Token: "0123456789abcdef-ci"}}
	if got := cfg.HTTP.server().AdminTokens; !reflect.DeepEqual(got, want) || !cfg.HTTP.adminOn() {
		t.Fatalf("server tokens %+v, want %+v", got, want)
	}
	d := cfg.Describe()
	if !strings.Contains(d, "admin API on (2 named tokens: admin:ops1, admin:ci.bot)") || strings.Contains(d, "0123456789abcdef") {
		t.Errorf("Describe:\n%s", d)
	}
}

func TestHTTPConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		vars map[string]string
		want []string
	}{
		{
			name: "listen",
			body: "http:\n  listen: \"8080\"\n",
			want: []string{`FILE:2: http.listen is "8080": expected host:port such as 127.0.0.1:8080 or :8080`},
		},
		{
			name: "port",
			body: "http:\n  listen: \"localhost:http\"\n",
			want: []string{`FILE:2: http.listen is "localhost:http": the port must be a number from 0 to 65535`},
		},
		{
			name: "public url not https",
			body: "http:\n  listen: :8080\n  public_url: http://bot.example.com/x\n",
			want: []string{"FILE:3: http.public_url (http://bot.example.com/x) is not https: platforms deliver webhooks only to HTTPS (http:// is accepted for a loopback host alone)"},
		},
		{
			name: "public url with a password",
			body: "http:\n  public_url: https://me:hunter2@bot.example.com/?k=v\n  listen: :8080\n",
			want: []string{"FILE:2: http.public_url (https://bot.example.com/) has a user, query or fragment: give only https://host[:port][/path]"},
		},
		{
			name: "public url nonsense",
			body: "http:\n  public_url: bot.example.com\n",
			want: []string{
				"FILE:2: http.public_url is not an https:// URL such as https://bot.example.com",
				"FILE:2: http.public_url is set but http.listen is empty: set http.listen to the address the proxy forwards to",
			},
		},
		{
			name: "short admin token from the environment",
			body: "http: {listen: \":0\"}\n",
			vars: map[string]string{"PLANGATE_ADMIN_TOKEN": "hunter2"},
			want: []string{"FILE:1: http.admin_token is shorter than 16 characters: use a long random value, e.g. from openssl rand -hex 32"},
		},
		{
			name: "admin token with a newline",
			body: "http:\n  admin_token: \"0123456789abcdef\\nX-Other: 1\"\n",
			want: []string{"FILE:2: http.admin_token contains a space or control character: it is sent in an HTTP header"},
		},
		{
			name: "admin_token beside admin_tokens",
			body: "http:\n  admin_tokens: [{name: ops1, token: 0123456789abcdef-ops1}]\n",
			vars: map[string]string{"PLANGATE_ADMIN_TOKEN": "0123456789abcdef-admin"},
			want: []string{"FILE:1: http.admin_token is set together with http.admin_tokens: give every operator a named token in admin_tokens and leave admin_token empty (unset its variable)"},
		},
		{
			name: "admin token names and values",
			body: "http:\n  admin_tokens:\n    - {name: '', token: 0123456789abcdef-a}\n    - {name: 'Ops 1', token: short}\n    - {name: ops, token: 0123456789abcdef-b}\n" +
				"    - {name: ops, token: 0123456789abcdef-c}\n    - {name: ci, token: 0123456789abcdef-b}\n    - {name: nobody, token: \"${NOBODY_TOKEN}\"}\n",
			want: []string{
				"FILE:3: http.admin_tokens[0].name is empty: name the operator who holds this token (approvals name them admin:<name>)",
				`FILE:4: http.admin_tokens[1].name is "Ops 1": may hold only a-z, 0-9, ".", "_" and "-" (at most 32, starting with a letter or digit)`,
				"FILE:4: http.admin_tokens[1].token is shorter than 16 characters: use a long random value, e.g. from openssl rand -hex 32",
				`FILE:6: http.admin_tokens[3].name is "ops": is also the name of admin_tokens[2]: one name per operator`,
				"FILE:7: http.admin_tokens[4].token is the same as admin_tokens[2].token: one token per operator, or the two could not be told apart",
				"FILE:8: http.admin_tokens[5].token is empty: set NOBODY_TOKEN",
			},
		},
		{
			name: "max body out of range",
			body: "http:\n  max_body: 100\n",
			want: []string{"FILE:2: http.max_body is 100B: it must be between 1KiB and 1GiB"},
		},
		{
			name: "max body in decimal units",
			body: "http:\n  max_body: 1MB\n",
			want: []string{`FILE:2: http.max_body: expected a size such as 1MiB, 512KiB or 1048576 (bytes), got "1MB"`},
		},
		{
			name: "unknown key",
			body: "http:\n  listen_addr: :8080\n",
			want: []string{`FILE:2: unknown key "listen_addr" in http (valid keys: listen, public_url, admin_token, admin_tokens, max_body)`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadProblems(t, tc.body, tc.vars)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems\n got %q\nwant %q", got, tc.want)
			}
			for _, p := range got {
				if strings.Contains(p, "hunter2") {
					t.Errorf("a secret is shown: %s", p)
				}
			}
		})
	}
}
