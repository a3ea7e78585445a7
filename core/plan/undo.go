package plan

import "time"

// Undone is a /plan undo of a version: who asked, when, and what was put back to the
// state at acceptance. It is recorded on the version's Run; a version is undone once.
type Undone struct {
	By     string       `json:"by"` // the person's id, or admin:<name>
	ByName string       `json:"by_name,omitempty"`
	At     time.Time    `json:"at"`
	Files  []UndoneFile `json:"files"`
}

// UndoAction is what /plan undo did to one path.
type UndoAction string

// The undo actions.
const (
	UndoRestored  UndoAction = "restored"  // the content and mode at acceptance written back
	UndoRemoved   UndoAction = "removed"   // the execution created it
	UndoRecreated UndoAction = "recreated" // the execution removed it
)

// UndoneFile is one path /plan undo put back.
type UndoneFile struct {
	Path   string     `json:"path"`
	Action UndoAction `json:"action"`
}

// Restore is what a workspace toolbox found or did for /plan undo. When Changed or Unkept
// is not empty nothing was written.
type Restore struct {
	// Changed are the paths that are no longer as the execution left them (someone else
	// changed them since).
	Changed []string
	// Unkept are the paths whose state at acceptance plangate did not keep (a file over
	// the kept size, one that could not be read, or no baselines directory).
	Unkept []string
	// Files is what was put back, in the order it was done: removals first.
	Files []UndoneFile
}
