package ctrl

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TokenEnv is the environment variable that holds the shared token when
// no token file is named.
const TokenEnv = "RDMARUN_TOKEN"

// ReadToken returns the shared token from file, or from $RDMARUN_TOKEN
// when file is empty. A token file must not be empty: an empty one would
// silently turn authentication off.
func ReadToken(file string) (string, error) {
	if file == "" {
		return os.Getenv(TokenEnv), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return t, nil
}

// tokenBytes is the entropy of a new token: as much as an AES-256 key.
const tokenBytes = 32

// WriteToken writes a new random token to file, readable by its owner
// only (mode 0600), and gives the file to uid:gid unless uid is -1. An
// existing file is kept (the error wraps fs.ErrExist) unless replace is
// set: the token is the fleet's, and replacing it on one node locks that
// node out of every other. The file appears whole or not at all.
func WriteToken(file string, replace bool, uid, gid int) (err error) {
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".token-*")
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes the file 0600 already; this says so where it matters.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("token: %w", err)
	}
	if _, err := tmp.WriteString(hex.EncodeToString(raw) + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("token: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	if uid != -1 {
		if err := os.Chown(tmp.Name(), uid, gid); err != nil {
			return fmt.Errorf("token: %w", err)
		}
	}
	if replace {
		if err := os.Rename(tmp.Name(), file); err != nil {
			return fmt.Errorf("token: %w", err)
		}
		return nil
	}
	// A hard link fails if file exists, atomically, where a check and a
	// rename could race with another writer.
	if err := os.Link(tmp.Name(), file); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	return os.Remove(tmp.Name())
}
