package tools

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
)

// maxGitIndex bounds the index read to find gitlinks; a larger one is not looked into.
const maxGitIndex = 64 << 20

// gitlinks lists the paths the workspace's .git/index records as gitlinks (mode 160000:
// a submodule, or a repository a command nested below the root and added). git status at
// the root runs git inside each with that repository's own settings, so they are guarded
// like the root's. An index it cannot read (missing, too large, a format it does not
// know) gives none.
func gitlinks(root *os.Root) []string {
	f, err := root.Open(".git/index")
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() > maxGitIndex {
		return nil
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil
	}
	return parseGitlinks(buf.Bytes())
}

// parseGitlinks reads the gitlinks out of an index file (versions 2, 3 and 4).
func parseGitlinks(b []byte) []string {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil
	}
	version, count := binary.BigEndian.Uint32(b[4:8]), binary.BigEndian.Uint32(b[8:12])
	if version < 2 || version > 4 {
		return nil
	}
	var out []string
	pos, prev := 12, ""
	for range count {
		start := pos
		// ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each), sha-1, flags.
		if pos+62 > len(b) {
			return out
		}
		mode := binary.BigEndian.Uint32(b[pos+24 : pos+28])
		flags := binary.BigEndian.Uint16(b[pos+60 : pos+62])
		pos += 62
		if version >= 3 && flags&0x4000 != 0 { // extended flags
			pos += 2
		}
		var name string
		if version == 4 {
			// The path is prev with its last n bytes removed, then a NUL-ended suffix.
			n, w := 0, 0
			for {
				if pos+w >= len(b) {
					return out
				}
				c := b[pos+w]
				n = n<<7 | int(c&0x7f)
				w++
				if c&0x80 == 0 {
					break
				}
				n++
			}
			pos += w
			end := bytes.IndexByte(b[pos:], 0)
			if end < 0 || n > len(prev) {
				return out
			}
			name = prev[:len(prev)-n] + string(b[pos:pos+end])
			pos += end + 1
		} else {
			end := bytes.IndexByte(b[pos:], 0)
			if end < 0 {
				return out
			}
			name = string(b[pos : pos+end])
			// Entries are padded with NULs to a multiple of 8 bytes.
			pos = start + (pos-start+end+8)&^7
		}
		prev = name
		if mode>>12 == 0o16 && filepath.IsLocal(name) && !strings.Contains("/"+name+"/", "/.git/") {
			out = append(out, name)
		}
	}
	return out
}
