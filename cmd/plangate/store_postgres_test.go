package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/plangate/plangate/store/pgtest"
)

// store.driver and store.dsn: every bad combination is a config error naming its line, and
// a DSN (which may carry a password) is never repeated.
func TestStoreDriverConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		vars map[string]string
		want string
	}{
		{"unknown driver", "plans: {dir: p}\nstore:\n  driver: mysql\n", nil,
			`FILE:3: store.driver is "mysql": expected sqlite or postgres`},
		{"postgres without a dsn", "store:\n  driver: postgres\n", nil,
			`FILE:1: store.dsn is empty: set PLANGATE_DATABASE_URL`},
		{"postgres with an empty dsn", "store:\n  driver: postgres\n  dsn: \"\"\n", nil,
			`FILE:3: store.dsn is empty: set store.dsn`},
		{"malformed dsn in the file", "store:\n  driver: postgres\n  dsn: postgres://u:s3cret@h:notaport/db\n", nil,
			`FILE:3: store.dsn is not a valid PostgreSQL connection string: write postgres://USER:PASSWORD@HOST:5432/DBNAME or host=HOST dbname=DBNAME ...`},
		{"malformed dsn from the environment", "store: {driver: postgres}\n", map[string]string{"PLANGATE_DATABASE_URL": "postgres://u:s3cret@h:notaport/db"},
			`FILE:1: store.dsn is not a valid PostgreSQL connection string: write postgres://USER:PASSWORD@HOST:5432/DBNAME or host=HOST dbname=DBNAME ...`},
		{"sqlite without a path", "store: {path: \"\"}\n", nil,
			`FILE:1: store.path is empty: set it to a path (relative paths start at the config file's directory)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadProblems(t, tc.body, tc.vars)
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), tc.want)
			}
			if strings.Contains(got[0], "s3cret") {
				t.Errorf("the error shows the DSN's password: %s", got[0])
			}
		})
	}
}

// With postgres, store.path is not plangate's file: it may lie anywhere (even inside the
// workspace) and is not hidden from the tools; the summary names the database, not the
// password.
func TestStorePostgresConfig(t *testing.T) {
	path := writeConfig(t, "store: {driver: postgres, path: workspace/unused.db}\n")
	cfg, err := LoadConfig(path, env(map[string]string{"PLANGATE_DATABASE_URL": "postgres://app:s3cret@db.internal:6543/plangate?sslmode=disable"}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg.Store.DSN, "s3cret") {
		t.Fatalf("dsn not expanded (%q): the leak check below would prove nothing", cfg.Store.DSN)
	}
	d := cfg.Describe()
	if want := "store:     postgres app@db.internal:6543/plangate (dsn from PLANGATE_DATABASE_URL)\n"; !strings.Contains(d, want) {
		t.Errorf("Describe() lacks %q:\n%s", want, d)
	}
	if strings.Contains(d, "s3cret") {
		t.Errorf("Describe() shows the password:\n%s", d)
	}
	for _, f := range ownFiles(cfg) {
		if strings.HasSuffix(f, "unused.db") {
			t.Errorf("ownFiles hides the unused SQLite path %s", f)
		}
	}
}

// Every command that opens the store goes to PostgreSQL when the config says so: migrate,
// check, chat, the read-only views; backup points at pg_dump.
func TestStoreCommandsOnPostgres(t *testing.T) {
	dsn := pgtest.Schema(t)
	cfg := writeConfig(t, "store: {driver: postgres, dsn: \""+dsn+"\"}\nllm: {provider: script, script: \"${SCRIPT}\"}\n")
	code, out, errOut := cli(t, "", "store", "migrate", "--config", cfg)
	m := regexp.MustCompile(`^postgres pg@.*:5432/postgres: schema version 0 -> (\d+) \(applied 0001_init(, \d{4}_[a-z_]+)*\)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("first migrate: %d\nstdout %q\nstderr %s", code, out, errOut)
	}
	code, out, _ = cli(t, "", "store", "migrate", "--config", cfg)
	if code != 0 || !strings.HasSuffix(out, ": schema version "+m[1]+", up to date\n") {
		t.Errorf("second migrate: %d %q", code, out)
	}
	code, out, errOut = cli(t, "", "store", "check", "--config", cfg)
	if code != 0 || !regexp.MustCompile(`^postgres pg@.*: ok \(server [0-9.]+.* answers, schema version `+m[1]+`\)\n$`).MatchString(out) {
		t.Errorf("store check: %d %q %s", code, out, errOut)
	}
	code, _, errOut = cli(t, "", "store", "backup", "copy.db", "--config", cfg)
	if code != 1 || !strings.Contains(errOut, "pg_dump") {
		t.Errorf("store backup: %d %q, want exit 1 naming pg_dump", code, errOut)
	}
	if code, _, errOut := cli(t, "/plan on tidy the docs\n", "chat", "--config", cfg); code != 0 {
		t.Fatalf("chat: %d %s", code, errOut)
	}
	code, out, errOut = cli(t, "", "sessions", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "terminal:local:main") || !strings.Contains(out, "awaiting_approval") {
		t.Errorf("sessions list reads another database than chat wrote: %d %q %s", code, out, errOut)
	}
	if code, out, errOut := cli(t, "", "nudges", "list", "--config", cfg); code != 0 || !strings.Contains(out, "terminal:local:main") {
		t.Errorf("nudges list: %d %q %s", code, out, errOut)
	}
	// A server that is not there: the error names the database, not a password.
	bad := writeConfig(t, "store: {driver: postgres, dsn: \"postgres://u:s3cret@127.0.0.1:1/x?connect_timeout=2\"}\n")
	code, _, errOut = cli(t, "", "store", "check", "--config", bad)
	if code != 1 || strings.Contains(errOut, "s3cret") || !strings.Contains(errOut, "postgres u@127.0.0.1:1/x") {
		t.Errorf("unreachable server: %d %q", code, errOut)
	}
}

// `plangate store copy` moves a deployment from its SQLite file into an empty PostgreSQL
// database and back, refuses a target that holds anything, and never shows a password.
func TestStoreCopyCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, "store: {path: "+dir+"/src.db}\nllm: {provider: script, script: \"${SCRIPT}\"}\n")
	if code, _, errOut := cli(t, "/plan on tidy the docs\n", "chat", "--config", cfg); code != 0 {
		t.Fatalf("chat: %d %s", code, errOut)
	}
	dsn := pgtest.Schema(t)
	code, out, errOut := cli(t, "", "store", "copy", "--from", "sqlite:"+dir+"/src.db", "--to", "postgres:"+dsn)
	if code != 0 || !regexp.MustCompile(`^copied \d+ rows from .*/src.db to postgres pg@.*/postgres \(sessions 1, plans 1, messages [1-9]\d*, plan_events [1-9]\d*, nudges [1-9]\d*, outbox [1-9]\d*\)\n$`).MatchString(out) {
		t.Fatalf("copy to postgres: %d %q %s", code, out, errOut)
	}
	pgCfg := writeConfig(t, "store: {driver: postgres, dsn: \""+dsn+"\"}\n")
	code, out, _ = cli(t, "", "sessions", "list", "--config", pgCfg)
	if code != 0 || !strings.Contains(out, "terminal:local:main") || !strings.Contains(out, "awaiting_approval") {
		t.Errorf("the copied session is not in PostgreSQL: %d %q", code, out)
	}
	code, _, errOut = cli(t, "", "store", "copy", "--from", "sqlite:"+dir+"/src.db", "--to", "postgres:"+dsn)
	if code != 1 || !strings.Contains(errOut, "table sessions is not empty: copy into an empty database") {
		t.Errorf("copy into a non-empty database: %d %q", code, errOut)
	}
	// And back into a new file.
	code, out, errOut = cli(t, "", "store", "copy", "--from", "postgres:"+dsn, "--to", "sqlite:"+dir+"/back.db")
	if code != 0 || !strings.HasPrefix(out, "copied ") {
		t.Fatalf("copy back: %d %q %s", code, out, errOut)
	}
	backCfg := writeConfig(t, "store: {path: "+dir+"/back.db}\n")
	if code, out, _ := cli(t, "", "sessions", "list", "--config", backCfg); code != 0 || !strings.Contains(out, "awaiting_approval") {
		t.Errorf("the session did not come back: %d %q", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"store", "copy"}, 2, "plangate store copy --from sqlite:FILE --to postgres://"},
		{[]string{"store", "copy", "--from", "sqlite:" + dir + "/src.db"}, 2, "plangate store copy --from"},
		{[]string{"store", "copy", "--from", "sqlite:" + dir + "/missing.db", "--to", "postgres:" + dsn}, 1, "missing.db does not exist"},
		{[]string{"store", "copy", "--from", "postgres:" + dsn, "--to", "sqlite:" + dir + "/src.db"}, 1, "src.db exists: copy into a new file"},
		{[]string{"store", "copy", "--from", "mysql://u:s3cret@h/db", "--to", "sqlite:" + dir + "/x.db"}, 2, `not "mysql..."`},
		{[]string{"store", "copy", "--from", "sqlite:" + dir + "/src.db", "--to", "postgres://u:s3cret@h:notaport/db"}, 1, "not a valid PostgreSQL connection string"},
		{[]string{"store", "copy", "--from", "sqlite:" + dir + "/src.db", "--to", "sqlite:" + dir + "/src.db"}, 1, "exists"},
	} {
		code, _, errOut := cli(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "s3cret") {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
