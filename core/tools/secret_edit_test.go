package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/secrets"
	"github.com/plangate/plangate/core/tools"
)

// An edit that completes a secret with the text around it is refused and the file stays as
// it was; a secret the file held before the edit, and an ordinary edit, are not refused.
func TestEditCompletingASecretIsRefused(t *testing.T) {
	sc, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	tb := tools.New(tools.Config{Secrets: sc})
	dir := t.TempDir()
	ws := core.Workspace{Dir: dir}
	key := "AKIA" + "Z7VRSQ5TLXJ4QPNC"
	pad := strings.Repeat("filler line\n", 40)
	edit := func(file, old, new string) error {
		args, _ := json.Marshal(map[string]string{"path": file, "old": old, "new": new})
		_, err := tb.Call(context.Background(), ws, tools.ToolEditFile, args)
		return err
	}
	write := func(file, content string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	before := pad + "aws_access_key_id = \"" + key[:8] + "PLACEHOLDER\"\n" + pad
	write("cfg.py", before)
	err = edit("cfg.py", "PLACEHOLDER", key[8:])
	var sw *core.SecretWrite
	if !errors.As(err, &sw) || !strings.Contains(err.Error(), "aws-access-token on line 41") {
		t.Fatalf("edit completing a key: %v, want a SecretWrite naming line 41", err)
	}
	if strings.Contains(err.Error(), key) {
		t.Fatal("the error shows the secret")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cfg.py")); string(b) != before {
		t.Fatal("the file changed")
	}

	// The key was there before: editing another word on its line is fine.
	write("old.py", pad+"aws_access_key_id = \""+key+"\" # region eu\n")
	if err := edit("old.py", "region eu", "region us"); err != nil {
		t.Fatalf("edit beside an old secret: %v", err)
	}
	write("plain.py", "x = 1\ny = 2\n")
	if err := edit("plain.py", "y = 2", "y = 3"); err != nil {
		t.Fatalf("ordinary edit: %v", err)
	}
}
