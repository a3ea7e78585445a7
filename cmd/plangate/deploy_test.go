package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readDeploy reads a file of the repository's deploy/ directory.
func readDeploy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// envFile reads KEY=value lines, skipping comments.
func envFile(t *testing.T, text string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !isEnvName(k) {
			t.Fatalf("plangate.env.example:%d: not KEY=value: %q", i+1, line)
		}
		vars[k] = v
	}
	return vars
}

// TestDeployFiles keeps deploy/ consistent: the config loads with the environment file's
// variables, every secret it names is in that file with a placeholder (never a real
// value), and the unit runs `plangate serve` with the paths the config uses.
func TestDeployFiles(t *testing.T) {
	vars := envFile(t, readDeploy(t, "plangate.env.example"))
	for k, v := range vars {
		if v != "" && !strings.HasPrefix(v, "replace-with-") {
			t.Errorf("plangate.env.example: %s has a value that is not a placeholder", k)
		}
	}
	// The references in the file's values, not in its comments.
	values := regexp.MustCompile(`(?m)(^|\s)#.*$`).ReplaceAllString(readDeploy(t, "config.yaml"), "")
	for _, m := range regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`).FindAllStringSubmatch(values, -1) {
		if _, ok := vars[m[1]]; !ok {
			t.Errorf("deploy/config.yaml uses ${%s}, which plangate.env.example does not list", m[1])
		}
	}

	// As shipped, the placeholders are refused, each naming its variable.
	_, err := LoadConfig(filepath.Join("..", "..", "deploy", "config.yaml"), env(vars))
	for k, v := range vars {
		if v != "" && (err == nil || !strings.Contains(err.Error(), "set "+k+" to the real value")) {
			t.Errorf("the placeholder of %s is not refused: %v", k, err)
		}
	}
	// With real values it loads.
	real := map[string]string{}
	for k, v := range vars {
		real[k] = strings.Replace(v, "replace-with-", "an-operators-", 1)
	}
	cfg, err := LoadConfig(filepath.Join("..", "..", "deploy", "config.yaml"), env(real))
	if err != nil {
		t.Fatalf("deploy/config.yaml: %v", err)
	}
	const state = "/var/lib/plangate"
	for key, p := range map[string]string{"store.path": cfg.Store.Path, "plans.dir": cfg.Plans.Dir, "workspace.root": cfg.Workspace.Root} {
		if !within(p, state) {
			t.Errorf("%s is %s, outside the unit's StateDirectory %s", key, p, state)
		}
	}
	if cfg.HTTP.Listen == "" || cfg.HTTP.AdminToken == "" || cfg.openApprovalWarning() != "" {
		t.Errorf("deploy config: http %+v, approvers %v", cfg.HTTP, cfg.Access.Approvers)
	}

	unit := readDeploy(t, "plangate.service")
	for _, want := range []string{
		"\nExecStart=/usr/local/bin/plangate serve --config /etc/plangate/config.yaml\n",
		"\nEnvironmentFile=/etc/plangate/plangate.env\n",
		"\nStateDirectory=plangate\n",
		"\nWorkingDirectory=" + state + "\n",
		"\nKillSignal=SIGTERM\n",
		"\nWantedBy=multi-user.target\n",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("plangate.service lacks %q", strings.TrimSpace(want))
		}
	}
	if regexp.MustCompile(`(?m)^Environment=`).MatchString(unit) {
		t.Error("plangate.service sets Environment= inline: secrets belong in the EnvironmentFile")
	}
}

// TestReadmeSetupSetsApprovers: each platform's setup in the README sets access.approvers,
// so nobody copies a setup in which the first person in a chat owns it.
func TestReadmeSetupSetsApprovers(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, platform := range []string{"Telegram", "Slack", "Discord"} {
		_, section, ok := strings.Cut(readme, "\n## "+platform+"\n")
		if !ok {
			t.Errorf("README.md has no %s section", platform)
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		want := regexp.MustCompile(`(?m)^\s*access:\n\s+approvers: \[` + strings.ToLower(platform) + `:`)
		if !want.MatchString(section) {
			t.Errorf("the README's %s setup does not set access.approvers to a %s id", platform, strings.ToLower(platform))
		}
	}
}
