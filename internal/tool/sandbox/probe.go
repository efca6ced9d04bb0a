package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/arbor-run/arbor/internal/atomicfile"
)

// The probe cache.
//
// Detect's probe (bubblewrap creating every namespace the sandbox uses)
// costs a process and a network namespace, 30–70 ms of every start, and
// a gateway starts an arbor process per chat. Whether the probe succeeds
// depends only on this machine's kernel since boot, the user namespace
// arbor runs in, its uid, the bwrap binary and the sysctls that allow or
// forbid unprivileged user namespaces. A success is remembered under the
// user's cache directory as a digest of those; a start that computes the
// same digest skips the probe. A failure is never remembered: the next
// start probes again. Should the namespaces stop working anyway (a
// security module changed its mind), the confined command fails with
// bubblewrap's error, as it would if that happened after a probe.

// probeSysctls are the switches that permit unprivileged user namespaces
// on common kernels; a missing file reads as empty.
var probeSysctls = []string{
	"/proc/sys/user/max_user_namespaces",
	"/proc/sys/kernel/unprivileged_userns_clone",
	"/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
	"/proc/sys/kernel/userns_restrict",
}

// probeKey is the digest of what a probe's outcome depends on; "" when
// something cannot be read (then the probe runs).
func probeKey(bwrap string) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	userns, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		return ""
	}
	fi, err := os.Stat(bwrap)
	if err != nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "boot %s\nuserns %s\nuid %d\nbwrap %s %d %d\n", strings.TrimSpace(string(boot)), userns,
		os.Getuid(), bwrap, fi.Size(), fi.ModTime().UnixNano())
	for _, p := range probeSysctls {
		v, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %s\n", p, strings.TrimSpace(string(v)))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// probeCache is the file that holds the key of the last successful probe;
// "" when the user has no cache directory.
func probeCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "arbor", "sandbox-probe")
}

// probed reports whether a probe with key succeeded before.
func probed(cache, key string) bool {
	if cache == "" || key == "" {
		return false
	}
	b, err := os.ReadFile(cache)
	return err == nil && strings.TrimSpace(string(b)) == key
}

// rememberProbe records a successful probe with key; failing to write the
// cache only costs the next start a probe.
func rememberProbe(cache, key string) {
	if cache != "" && key != "" {
		_ = atomicfile.Write(cache, []byte(key+"\n"), 0o600, 0o700)
	}
}
