package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeScontrol stands in for Slurm's CLI: it answers
// `scontrol show hostnames LIST` for a few lists, the way scontrol does.
const fakeScontrol = `#!/bin/sh
if [ "$1" != show ] || [ "$2" != hostnames ] || [ $# -ne 3 ]; then
	echo "fake scontrol: unexpected arguments: $*" >&2
	exit 64
fi
case "$3" in
"node[01-03],gpu7") printf 'node01\nnode02\nnode03\ngpu7\n' ;;
"bad[") echo "scontrol: error: Invalid hostlist: bad[" >&2; exit 1 ;;
"silent") exit 0 ;;
"hang") exec sleep 30 ;;
*) echo "fake scontrol: no answer for $3" >&2; exit 65 ;;
esac
`

func withFakeScontrol(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte(fakeScontrol), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/usr/bin:/bin")
}

func TestSlurmHosts(t *testing.T) {
	withFakeScontrol(t)
	got, err := SlurmHosts(context.Background(), " node[01-03],gpu7\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"node01", "node02", "node03", "gpu7"}; !slices.Equal(got, want) {
		t.Errorf("SlurmHosts = %q, want %q", got, want)
	}
}

func TestSlurmHostsErrors(t *testing.T) {
	withFakeScontrol(t)
	for _, tc := range []struct{ list, want string }{
		{"bad[", `expand Slurm node list "bad[": scontrol: scontrol: error: Invalid hostlist: bad[`},
		{"silent", `expand Slurm node list "silent": scontrol printed no host names`},
		{"", "empty Slurm node list (is SLURM_JOB_NODELIST set?): run inside a Slurm allocation or give the hosts explicitly"},
	} {
		_, err := SlurmHosts(context.Background(), tc.list)
		if err == nil || err.Error() != tc.want {
			t.Errorf("SlurmHosts(%q) error %v, want %s", tc.list, err, tc.want)
		}
	}
}

func TestSlurmHostsDeadline(t *testing.T) {
	withFakeScontrol(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := SlurmHosts(ctx, "hang")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("returned after %v; the deadline was 200ms", took)
	}
	if err == nil || !strings.Contains(err.Error(), "scontrol did not finish: context deadline exceeded") {
		t.Errorf("error %v, want scontrol did not finish: context deadline exceeded", err)
	}
}

func TestSlurmHostsWithoutScontrol(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := SlurmHosts(context.Background(), "node[1-2]")
	want := `expand Slurm node list "node[1-2]": scontrol not found on PATH: run inside a Slurm allocation or give the hosts explicitly`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
