// Package atomicfile replaces files atomically: a reader sees the old file
// or the new one, never a half-written one, and a crash leaves one of the
// two. Configuration and permission rule files are written this way.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path by a file holding data with mode perm, creating its
// directory (mode dirPerm) when missing: the data goes to a temporary file
// in the same directory, is synced, and is renamed over path.
func Write(path string, data []byte, perm, dirPerm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// The mode is set before the data is written, so a secret is never
	// readable by others, even briefly.
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
