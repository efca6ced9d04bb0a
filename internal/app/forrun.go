package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/store"
)

// ForRun is the App stored run r works in: a view of the run's workspace
// when it is not a's (release closes it; else release does nothing), in
// the run's permission mode unless keepMode (the caller chose a mode of
// its own). A run resumed from another directory, or by another process,
// so goes on where and as it started.
func (a *App) ForRun(r store.Run, keepMode bool) (v *App, release func(), err error) {
	v, release = a, func() {}
	if r.Workspace != "" && filepath.Clean(r.Workspace) != a.Workspace {
		if fi, err := os.Stat(r.Workspace); err != nil || !fi.IsDir() {
			return nil, nil, fmt.Errorf("%w: run %s works in %s, which is no directory here", ErrUsage, r.ID, r.Workspace)
		}
		if v, err = a.In(r.Workspace); err != nil {
			return nil, nil, fmt.Errorf("run %s: %w", r.ID, err)
		}
		release = v.Close
	}
	if m, err := permission.ParseMode(r.Mode); err == nil && r.Mode != "" && !keepMode {
		v.Permissions.SetMode(m)
	}
	return v, release, nil
}
