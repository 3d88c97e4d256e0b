package ctrl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	good, empty := filepath.Join(dir, "good"), filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := ReadToken(good); err != nil || tok != "s3cret" {
		t.Errorf("good: %q, %v", tok, err)
	}
	if _, err := ReadToken(empty); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty: %v", err)
	}
	if _, err := ReadToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file accepted")
	}
	t.Setenv(TokenEnv, "from-env")
	if tok, err := ReadToken(""); err != nil || tok != "from-env" {
		t.Errorf("env: %q, %v", tok, err)
	}
}

func TestWriteToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := WriteToken(file, false, -1, -1); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	first, err := ReadToken(file)
	if err != nil || len(first) != 2*tokenBytes {
		t.Fatalf("ReadToken = %q, %v; want %d hex digits", first, err, 2*tokenBytes)
	}
	if err := WriteToken(file, false, -1, -1); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second write without replace: %v, want fs.ErrExist", err)
	}
	if again, _ := ReadToken(file); again != first {
		t.Error("a refused write changed the token")
	}
	if err := WriteToken(file, true, -1, -1); err != nil {
		t.Fatal(err)
	}
	if again, _ := ReadToken(file); again == first {
		t.Error("replace kept the old token")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".token-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := WriteToken(filepath.Join(dir, "no-such-dir", "token"), false, -1, -1); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}
