//go:build !unix

package tools

import "io/fs"

// openNonBlock is 0 where open(2) has no O_NONBLOCK.
const openNonBlock = 0

// linkCount reports 1: link counts are not available here.
func linkCount(fs.FileInfo) uint64 { return 1 }
