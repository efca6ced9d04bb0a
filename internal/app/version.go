package app

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/arbor-run/arbor/internal/store/sqlite/driver"
)

// VersionText is what `arbor version` prints: arbor's version (version,
// or the module's from the build info when version is "dev" and the
// binary was built by `go install module@version`), the Go release and
// platform, then the SQLite the build links and through which driver.
func VersionText(version string) string {
	if version == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
	}
	return fmt.Sprintf("arbor %s (%s, %s/%s)\nSQLite %s (%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, driver.Version(), driver.Kind)
}
