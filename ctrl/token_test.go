package ctrl

import (
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
