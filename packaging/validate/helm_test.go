package validate

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// helmTimeout bounds one helm or go command; a render takes well under a
// second once helm is built.
const helmTimeout = 5 * time.Minute

// kubeVersions are the Kubernetes versions every case is rendered for: an
// older supported release and a current one.
var kubeVersions = []string{"1.30.0", "1.34.0"}

const (
	releaseName = "rdmarun"
	namespace   = "rdmarun"
)

// renderCase is one set of values the chart is rendered with.
type renderCase struct {
	name string
	args []string // helm flags: -f FILE, --set K=V
}

// repoRoot is the main module's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "tools", "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	return root
}

func chartDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "packaging", "helm", "rdmarun")
}

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary is $HELM, or the helm pinned in tools/go.mod (built into the
// go build cache on first use).
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if p := os.Getenv("HELM"); p != "" {
			helmPath = p
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "-C", filepath.Join(repoRoot(t), "tools"), "tool", "-n", "helm")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if helmErr = cmd.Run(); helmErr != nil {
			helmErr = &cmdError{args: cmd.Args, err: helmErr, stderr: errb.String()}
			return
		}
		helmPath = strings.TrimSpace(out.String())
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

type cmdError struct {
	args   []string
	err    error
	stderr string
}

func (e *cmdError) Error() string {
	return strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

// helm runs helm with args and returns its stdout, or an error carrying
// its stderr.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBinary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		// helm lint reports its findings on stdout.
		return out.String(), &cmdError{args: cmd.Args, err: err, stderr: out.String() + errb.String()}
	}
	return out.String(), nil
}

// render is `helm template` of the chart for one case and Kubernetes version.
func render(t *testing.T, c renderCase, kubeVersion string) string {
	t.Helper()
	args := append([]string{"template", releaseName, chartDir(t), "--namespace", namespace,
		"--kube-version", kubeVersion}, c.args...)
	out, err := helm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// renderCases are the default values, every example values file, and a
// token given as a value (the chart then makes the Secret).
func renderCases(t *testing.T) []renderCase {
	t.Helper()
	examples, err := filepath.Glob(filepath.Join(chartDir(t), "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) == 0 {
		t.Fatal("no example values files")
	}
	cases := []renderCase{
		{name: "default"},
		{name: "token-value", args: []string{"--set", "token.value=0123456789abcdef"}},
	}
	for _, e := range examples {
		cases = append(cases, renderCase{name: strings.TrimSuffix(filepath.Base(e), ".yaml"), args: []string{"-f", e}})
	}
	return cases
}
