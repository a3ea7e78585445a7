//go:build !unix

package terminal

import "os"

// openNoBlock opens p for reading (FIFOs that block in open are a unix matter).
func openNoBlock(p string) (*os.File, error) { return os.Open(p) }
