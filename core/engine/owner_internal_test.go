package engine

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// A lease owner is gone only when it names an ended process of this host.
func TestOwnerGone(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no hostname")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	ended := cmd.Process.Pid
	for _, c := range []struct {
		owner string
		gone  bool
	}{
		{fmt.Sprintf("%s/%d/x", host, ended), true},
		{fmt.Sprintf("%s/%d/x", host, os.Getpid()), false},
		{fmt.Sprintf("elsewhere-%s/%d/x", host, ended), false},
		{"test-process-1", false},
		{processOwner(), false},
	} {
		if got := OwnerGone(c.owner); got != c.gone {
			t.Errorf("OwnerGone(%q) = %v, want %v", c.owner, got, c.gone)
		}
	}
}
