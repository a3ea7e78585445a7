//go:build linux

package tools

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/net/bpf"
)

// The kernel's keyrings are not namespaced: a command could keep a key in its user's
// keyring (add_key), where it outlives the sandbox, and another session's command, or the
// gateway's user, would read it back (keyctl). The sandbox's seccomp filter answers those
// system calls with EPERM and lets every other through. It is a classic BPF program over
// struct seccomp_data (nr at offset 0, arch at 4), handed to bwrap on a pipe (--seccomp).

const (
	auditArchX86_64  = 0xc000003e
	auditArchAArch64 = 0xc00000b7
	x32SyscallBit    = 0x40000000
	seccompRetAllow  = 0x7fff0000
	seccompRetErrno  = 0x00050000
	errnoEPERM       = 1
)

// keyringSyscalls are add_key, request_key and keyctl by architecture.
var keyringSyscalls = map[uint32][]uint32{
	auditArchX86_64:  {248, 249, 250, x32SyscallBit | 248, x32SyscallBit | 249, x32SyscallBit | 250},
	auditArchAArch64: {217, 218, 219},
}

// seccompFilter is the filter as bwrap reads it: struct sock_filter entries in the host's
// byte order (little-endian on both architectures listed).
func seccompFilter() ([]byte, error) {
	deny := bpf.RetConstant{Val: seccompRetErrno | errnoEPERM}
	allow := bpf.RetConstant{Val: seccompRetAllow}
	var prog []bpf.Instruction
	for _, arch := range []uint32{auditArchX86_64, auditArchAArch64} {
		nrs := keyringSyscalls[arch]
		// arch == this one? else skip this block: one load, len(nrs) checks, allow.
		block := []bpf.Instruction{bpf.LoadAbsolute{Off: 0, Size: 4}}
		for i, nr := range nrs {
			// On a match jump to the deny after this block's allow.
			block = append(block, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(len(nrs) - i)})
		}
		block = append(block, allow, deny)
		prog = append(prog, bpf.LoadAbsolute{Off: 4, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: arch, SkipTrue: uint8(len(block))})
		prog = append(prog, block...)
	}
	prog = append(prog, allow) // another architecture: nothing to deny there
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assembling the sandbox's seccomp filter: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.LittleEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.LittleEndian.AppendUint32(out, r.K)
	}
	return out, nil
}

// seccompPipe returns the read end of a pipe holding the filter, for bwrap's --seccomp.
func seccompPipe() (*os.File, error) {
	prog, err := seccompFilter()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the seccomp pipe: %w", err)
	}
	defer w.Close()
	if _, err := w.Write(prog); err != nil { // a few hundred bytes: within the pipe's buffer
		r.Close()
		return nil, fmt.Errorf("writing the seccomp filter: %w", err)
	}
	return r, nil
}
