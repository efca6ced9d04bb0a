package cli

import (
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// ownedError explains a run that another live process drives: who owns it
// and how to stop it (or, with a non-empty wait, how to wait for it). It
// exits 1.
func ownedError(what string, held *store.LeaseHeldError, wait string) error {
	stop := fmt.Sprintf("stop it with: kill %d", held.PID)
	if held.Host != store.Hostname() {
		stop = fmt.Sprintf("stop it on %s with: kill %d", held.Host, held.PID)
	}
	if wait != "" {
		stop += ", or wait for it: " + wait
	}
	return &exitError{code: ExitFailure, err: fmt.Errorf(
		"%s is being driven by pid %d on %s since %s (last heartbeat %s); %s",
		what, held.PID, held.Host, held.AcquiredAt.Local().Format(time.DateTime),
		held.Heartbeat.Local().Format(time.TimeOnly), stop)}
}
