//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// Without a running systemd, TestSandboxUnderUnit starts `plangate chat` (the test binary
// standing in) the way systemd would start the unit, as far as it can be rebuilt here:
//
//   - as root: a mount namespace with the unit's ProtectSystem=strict, StateDirectory=,
//     PrivateTmp=, ProtectHome=, PrivateDevices= and ProtectProc=invisible, then the user
//     namespace of PrivateUsers=yes (when the unit sets it), then another user (unitUID)
//     with no capabilities, an empty bounding set and no_new_privs (setpriv);
//   - always: the unit's SystemCallFilter=, SystemCallErrorNumber=,
//     RestrictAddressFamilies= and RestrictNamespaces= as one seccomp filter, loaded just
//     before plangate starts, as systemd does.
//
// The scripted model then calls run_command under bubblewrap, and the command's own view
// of /proc/self/status is checked on the disk.

// unitUID is the service's user in the emulation (any id without a passwd entry works).
const unitUID = 61234

// unitState is the unit's StateDirectory as the emulation mounts it (as root).
const unitState = "/var/lib/plangate"

// serviceSettings are the [Service] section's assignments, in order, per key; an empty
// assignment resets the key's list, as systemd does.
func serviceSettings(unit string) map[string][]string {
	out := map[string][]string{}
	section := ""
	for _, l := range strings.Split(unit, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || l[0] == '#' || l[0] == ';':
		case l[0] == '[':
			section = l
		case section == "[Service]":
			k, v, _ := strings.Cut(l, "=")
			if v = strings.TrimSpace(v); v == "" {
				out[k] = []string{}
			} else {
				out[k] = append(out[k], v)
			}
		}
	}
	return out
}

// syscallGroups reads systemd's system call groups (@name -> members, some of them
// groups) from systemd-analyze.
func syscallGroups() (map[string][]string, error) {
	out, err := exec.Command("systemd-analyze", "syscall-filter", "--no-pager").Output()
	if err != nil {
		return nil, fmt.Errorf("listing systemd's system call groups: %w", err)
	}
	groups := map[string][]string{}
	group := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "@"):
			group = strings.TrimSpace(l)
		case group != "" && strings.HasPrefix(l, "    ") && !strings.HasPrefix(strings.TrimSpace(l), "#"):
			groups[group] = append(groups[group], strings.TrimSpace(l))
		}
	}
	if len(groups["@system-service"]) == 0 {
		return nil, fmt.Errorf("systemd-analyze syscall-filter listed no @system-service:\n%s", out)
	}
	return groups, nil
}

// expandSyscalls adds the system calls of names (calls and @groups) to set.
func expandSyscalls(set map[string]bool, groups map[string][]string, names []string) error {
	for _, n := range names {
		if !strings.HasPrefix(n, "@") {
			set[n] = true
			continue
		}
		members, ok := groups[n]
		if !ok {
			return fmt.Errorf("unknown system call group %s", n)
		}
		if err := expandSyscalls(set, groups, members); err != nil {
			return err
		}
	}
	return nil
}

// The address families and namespaces the emulation knows by name.
var (
	addressFamilies = map[string]uint64{"AF_UNIX": unix.AF_UNIX, "AF_INET": unix.AF_INET, "AF_INET6": unix.AF_INET6, "AF_NETLINK": unix.AF_NETLINK, "AF_PACKET": unix.AF_PACKET}
	namespaceFlags  = map[string]uint64{"cgroup": unix.CLONE_NEWCGROUP, "ipc": unix.CLONE_NEWIPC, "net": unix.CLONE_NEWNET, "mnt": unix.CLONE_NEWNS, "pid": unix.CLONE_NEWPID, "user": unix.CLONE_NEWUSER, "uts": unix.CLONE_NEWUTS, "time": unix.CLONE_NEWTIME}
)

// unitFilter is the seccomp filter systemd builds from the unit's SystemCallFilter= (an
// allow list, with ~ lines taken out of it), SystemCallErrorNumber=EPERM,
// RestrictAddressFamilies= (an allow list for socket(2)) and RestrictNamespaces= (an allow
// list for the CLONE_NEW* flags of clone, unshare and setns; clone3 answers ENOSYS so the C
// library falls back to clone). Calls this architecture does not have are left out, as
// systemd leaves them out.
func unitFilter(s map[string][]string, groups map[string][]string) (seccomp.Filter, error) {
	var f seccomp.Filter
	if v := s["SystemCallErrorNumber"]; len(v) != 1 || v[0] != "EPERM" {
		return f, fmt.Errorf("the emulation knows SystemCallErrorNumber=EPERM only, not %q", v)
	}
	filters := s["SystemCallFilter"]
	if len(filters) == 0 || strings.HasPrefix(filters[0], "~") {
		return f, fmt.Errorf("the emulation needs SystemCallFilter= to start with an allow list, not %q", filters)
	}
	allow := map[string]bool{}
	for _, line := range filters {
		deny, isDeny := strings.CutPrefix(line, "~")
		if !isDeny {
			if err := expandSyscalls(allow, groups, strings.Fields(line)); err != nil {
				return f, err
			}
			continue
		}
		denied := map[string]bool{}
		if err := expandSyscalls(denied, groups, strings.Fields(deny)); err != nil {
			return f, err
		}
		for n := range denied {
			delete(allow, n)
		}
	}
	native, err := arch.GetInfo("")
	if err != nil {
		return f, err
	}
	conditional := map[string]bool{"socket": true, "clone": true, "unshare": true, "setns": true, "clone3": true}
	var plain []string
	for n := range allow {
		if _, ok := native.SyscallNames[n]; ok && !conditional[n] {
			plain = append(plain, n)
		}
	}
	slices.Sort(plain)
	var cond []seccomp.NameWithConditions

	if fams := s["RestrictAddressFamilies"]; len(fams) > 0 && allow["socket"] {
		for _, name := range strings.Fields(strings.Join(fams, " ")) {
			af, ok := addressFamilies[name]
			if !ok {
				return f, fmt.Errorf("the emulation does not know the address family %s", name)
			}
			cond = append(cond, seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: af}}})
		}
	} else if allow["socket"] {
		plain = append(plain, "socket")
	}

	enosys := seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)}
	if ns := s["RestrictNamespaces"]; len(ns) > 0 {
		var denied uint64
		for _, flag := range namespaceFlags {
			denied |= flag
		}
		for _, name := range strings.Fields(strings.Join(ns, " ")) {
			flag, ok := namespaceFlags[name]
			if !ok {
				return f, fmt.Errorf("the emulation does not know the namespace %s", name)
			}
			denied &^= flag
		}
		// clone's flags are its first argument on x86-64 and arm64, setns's its second.
		for call, arg := range map[string]uint32{"clone": 0, "unshare": 0, "setns": 1} {
			if allow[call] {
				cond = append(cond, seccomp.NameWithConditions{Name: call, Conditions: seccomp.ArgumentConditions{{Argument: arg, Operation: seccomp.BitsNotSet, Value: denied}}})
			}
		}
		if allow["clone3"] {
			enosys.Names = append(enosys.Names, "clone3")
		}
	} else {
		for _, call := range []string{"clone", "unshare", "setns", "clone3"} {
			if allow[call] {
				plain = append(plain, call)
			}
		}
	}
	f = seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionErrno, // EPERM
			Syscalls: []seccomp.SyscallGroup{
				{Action: seccomp.ActionAllow, Names: plain, NamesWithCondtions: cond},
				enosys,
			},
		},
	}
	return f, nil
}

// unitStage runs one stage of the emulated service start in a re-executed test binary
// and returns its exit code:
//
//   - "userns" (root, in the emulated mount namespace): PrivateUsers=yes when the unit
//     sets it (a user namespace mapping root and unitUID only), then setpriv to unitUID
//     without capabilities or new privileges, running the "seccomp" stage;
//   - "seccomp": load the unit's seccomp filter, then become `plangate` with the
//     remaining arguments.
func unitStage(stage string, args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	unit, err := os.ReadFile(os.Getenv("PLANGATE_TEST_UNIT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	settings := serviceSettings(string(unit))
	switch stage {
	case "userns":
		id := strconv.Itoa(unitUID)
		cmd := exec.Command("setpriv", append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", self}, args...)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), unitStageEnv+"=seccomp")
		if slices.Equal(settings["PrivateUsers"], []string{"yes"}) {
			ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: unitUID, HostID: unitUID, Size: 1}}
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: ids, GidMappings: ids, GidMappingsEnableSetgroups: true}
		}
		if err := cmd.Run(); err != nil {
			if exit, ok := err.(*exec.ExitError); ok {
				return exit.ExitCode()
			}
			fmt.Fprintln(os.Stderr, "starting the service's user:", err)
			return 2
		}
		return 0
	case "seccomp":
		// The service's user namespace, for the test to check PrivateUsers= took effect.
		if m, err := os.ReadFile("/proc/self/uid_map"); err == nil {
			_ = os.WriteFile(filepath.Join(filepath.Dir(os.Getenv("PLANGATE_TEST_UNIT")), "uid_map"), m, 0o644)
		}
		groups, err := syscallGroups()
		if err == nil {
			var f seccomp.Filter
			if f, err = unitFilter(settings, groups); err == nil {
				err = seccomp.LoadFilter(f)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loading the unit's seccomp filter:", err)
			return 2
		}
		env := append(os.Environ(), "PLANGATE_TEST_MAIN=1")
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, unitStageEnv+"=") })
		err = syscall.Exec(self, append([]string{self}, args...), env)
		fmt.Fprintln(os.Stderr, "starting plangate under the filter:", err)
		return 2
	}
	fmt.Fprintln(os.Stderr, "unknown stage", stage)
	return 2
}

// mountScript builds the unit's file system view in a new mount namespace (run by
// `unshare --mount` as root), with STATE the host directory that becomes the
// StateDirectory, then starts the "userns" stage from the state directory's copy of the
// test binary.
const mountScript = `set -eu
cd "$STATE"
# PrivateTmp=yes
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
# StateDirectory=plangate, the only writable place besides /tmp: the namespace's /var/lib
# holds just that.
mount -t tmpfs -o mode=0755 tmpfs /var/lib
mkdir /var/lib/plangate
mount --bind /proc/self/cwd /var/lib/plangate
cd /
# ProtectSystem=strict: every other mount read-only, the API file systems aside.
for m in $(findmnt -rn -o TARGET); do
  case "$m" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*|/tmp|/var/lib/plangate) ;; *) mount -o remount,bind,ro "$m" ;; esac
done
# ProtectHome=yes
for d in /home /root /run/user; do [ ! -d "$d" ] || mount -t tmpfs -o ro,mode=0755 tmpfs "$d"; done
# PrivateDevices=yes: a /dev of its own with the pseudo devices only.
mount -t tmpfs -o mode=0755,nosuid tmpfs /dev
mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5; mknod -m 666 /dev/full c 1 7
mknod -m 666 /dev/random c 1 8; mknod -m 666 /dev/urandom c 1 9; mknod -m 666 /dev/tty c 5 0
mkdir /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
# ProtectProc= and ProcSubset=: a /proc of its own with those options.
if [ "$PROTECT_PROC" != default ] || [ "$PROC_SUBSET" != all ]; then
  opts=nosuid,nodev,noexec
  [ "$PROTECT_PROC" = default ] || opts="$opts,hidepid=$PROTECT_PROC"
  [ "$PROC_SUBSET" = all ] || opts="$opts,subset=$PROC_SUBSET"
  mount -t proc -o "$opts" proc /proc
fi
# ProtectKernelTunables=yes: the kernel's settings read-only.
if [ "$PROTECT_KERNEL_TUNABLES" = yes ]; then
  for p in /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus /proc/fs /proc/acpi; do
    [ ! -e "$p" ] || { mount --bind "$p" "$p"; mount -o remount,bind,ro "$p"; }
  done
fi
# ProtectKernelLogs=yes: no kernel log.
[ "$PROTECT_KERNEL_LOGS" != yes ] || mount --bind /dev/null /proc/kmsg
exec /var/lib/plangate/bin/plangate.test "$@"
`

// unitProbeScript is the scripted model of TestSandboxUnderUnit: a plan, then (once it is
// accepted) one run_command that records the command's view of its privileges in the
// workspace.
const unitProbeScript = `turns:
  - match: '^[^\[]'
    tool_calls:
      - name: exit_plan_mode
        args:
          title: Sandbox probe
          summary: Record what a command may do.
          plan:
            - {step: Record the command's privileges, acceptance_criteria: [probe.txt exists]}
          scope: {allowed_paths: ["**"]}
  - match: '\[PLAN_DECISION\]: approved'
    tool_calls:
      - name: run_command
        args: {argv: [sh, -c, "grep -E '^(Uid|NoNewPrivs|Seccomp_filters|CapBnd):' /proc/self/status > probe.txt"]}
  - match: '\[PLAN_DECISION\]: approved'
    text: probed
`

// TestSandboxUnderUnit runs run_command's bubblewrap sandbox inside the emulated unit
// (see unitStage): as shipped the command runs, under both filters (the unit's and the
// sandbox's own) as the service's user with no capabilities. Each copy without one of the
// exceptions the sandbox needs shows the sandbox failing, so each exception is needed.
func TestSandboxUnderUnit(t *testing.T) {
	needPrograms(t, "systemd-analyze", "bwrap", "setpriv", "unshare", "prlimit", "findmnt")
	root := os.Geteuid() == 0
	if !root {
		t.Log("not root: only the unit's seccomp filter and no_new_privs are emulated (no mounts, no other user)")
	}
	shipped := readDeploy(t, "plangate.service")
	for _, tc := range []struct {
		name, from, to string
		ok             bool
	}{
		{name: "as shipped", ok: true},
		{name: "without @mount", from: "\nSystemCallFilter=@system-service @mount\n", to: "\nSystemCallFilter=@system-service\n"},
		{name: "without AF_NETLINK", from: " AF_INET6 AF_NETLINK\n", to: " AF_INET6\n"},
		{name: "without user namespaces", from: "\nRestrictNamespaces=user ", to: "\nRestrictNamespaces="},
		{name: "with ProtectKernelTunables", from: "\nProtectProc=invisible\n", to: "\nProtectProc=invisible\nProtectKernelTunables=yes\n"},
		{name: "with ProtectKernelLogs", from: "\nProtectProc=invisible\n", to: "\nProtectProc=invisible\nProtectKernelLogs=yes\n"},
		{name: "with ProcSubset=pid", from: "\nProtectProc=invisible\n", to: "\nProtectProc=invisible\nProcSubset=pid\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each run is its own process tree and directory
			unit := shipped
			if tc.from != "" {
				if unit = strings.Replace(shipped, tc.from, tc.to, 1); unit == shipped {
					t.Fatalf("plangate.service has no %q to change", tc.from)
				}
			}
			if strings.HasPrefix(tc.name, "with ") && !root {
				t.Skip("needs root: the setting is a mount")
			}
			run := runUnderUnit(t, unit, root)
			out, probe := run.out, run.probe
			if !tc.ok {
				if probe != "" || !strings.Contains(out, "bwrap cannot start a sandbox") {
					t.Fatalf("the sandbox ran without the exception (probe %q):\n%s", probe, out)
				}
				_, why, _ := strings.Cut(out, "bwrap cannot start a sandbox on this host: ")
				why, _, _ = strings.Cut(why, ";")
				t.Logf("refused as expected: %s", why)
				return
			}
			want := []string{"NoNewPrivs:\t1", "Seccomp_filters:\t2", "CapBnd:\t0000000000000000"}
			if root {
				want = append(want, fmt.Sprintf("Uid:\t%d\t%d", unitUID, unitUID))
				// PrivateUsers=yes: a user namespace that maps root and the service's user only.
				if slices.Equal(serviceSettings(unit)["PrivateUsers"], []string{"yes"}) {
					got, want := strings.Fields(run.uidMap), strings.Fields(fmt.Sprintf("0 0 1 %d %d 1", unitUID, unitUID))
					if !slices.Equal(got, want) {
						t.Errorf("the service's uid_map is %q, not %q", got, want)
					}
				}
			}
			for _, w := range want {
				if !strings.Contains(probe, w) {
					t.Errorf("the command's /proc/self/status lacks %q:\n%s\nchat:\n%s", w, probe, out)
				}
			}
		})
	}
}

// unitRun is what runUnderUnit saw: the chat's output, the probe command's file ("" when
// the command did not run) and the service's /proc/self/uid_map.
type unitRun struct {
	out, probe, uidMap string
}

// runUnderUnit starts `plangate chat` under the emulated unit and has the scripted model
// run the probe command.
func runUnderUnit(t *testing.T, unit string, root bool) unitRun {
	t.Helper()
	host := t.TempDir()
	state := host // the StateDirectory's path as plangate sees it
	if root {
		state = unitState
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("store: {path: %[1]s/plangate.db}\nplans: {dir: %[1]s/plans}\nworkspace: {root: %[1]s/workspace}\n"+
		"llm: {provider: script, script: %[1]s/script.yaml}\ntools:\n  run_command: {enabled: true, allow: [sh]}\n", state)
	if err := os.Mkdir(filepath.Join(host, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"config.yaml": cfg, "script.yaml": unitProbeScript, "plangate.service": unit,
	} {
		if err := os.WriteFile(filepath.Join(host, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The test binary, linked (copied across file systems) into the state directory,
	// where the service's user can run it.
	if err := os.Link(self, filepath.Join(host, "bin", "plangate.test")); err != nil {
		bin, err := os.ReadFile(self)
		if err == nil {
			err = os.WriteFile(filepath.Join(host, "bin", "plangate.test"), bin, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"chat", "--config", state + "/config.yaml"}
	var cmd *exec.Cmd
	if root {
		if err := filepath.Walk(host, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, unitUID, unitUID)
		}); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command("unshare", append([]string{"--mount", "--propagation=private", "--", "sh", "-c", mountScript, "sh"}, args...)...)
		cmd.Env = []string{unitStageEnv + "=userns", "STATE=" + host}
		settings := serviceSettings(unit)
		for key, v := range map[string][2]string{
			"PROTECT_PROC": {"ProtectProc", "default"}, "PROC_SUBSET": {"ProcSubset", "all"},
			"PROTECT_KERNEL_TUNABLES": {"ProtectKernelTunables", "no"}, "PROTECT_KERNEL_LOGS": {"ProtectKernelLogs", "no"},
		} {
			value := v[1]
			if set := settings[v[0]]; len(set) > 0 {
				value = set[len(set)-1]
			}
			cmd.Env = append(cmd.Env, key+"="+value)
		}
	} else {
		cmd = exec.Command("setpriv", append([]string{"--inh-caps=-all", "--no-new-privs", "--", filepath.Join(host, "bin/plangate.test")}, args...)...)
		cmd.Env = []string{unitStageEnv + "=seccomp"}
	}
	cmd.Env = append(cmd.Env, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME="+state,
		"PLANGATE_TEST_UNIT="+state+"/plangate.service", "OPENAI_API_KEY=")
	cmd.Stdin = strings.NewReader("/plan on probe the sandbox\n/plan accept\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("plangate chat under the unit: %v\n%s", err, out)
	}
	run := unitRun{out: string(out)}
	uidMap, err := os.ReadFile(filepath.Join(host, "uid_map"))
	if err != nil {
		t.Fatalf("the seccomp stage did not record its uid_map: %v\n%s", err, out)
	}
	run.uidMap = string(uidMap)
	probes, _ := filepath.Glob(filepath.Join(host, "workspace", "*", "probe.txt"))
	if len(probes) > 0 {
		b, err := os.ReadFile(probes[0])
		if err != nil {
			t.Fatal(err)
		}
		run.probe = string(b)
	}
	return run
}
