package discovery

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/exporter/config"
)

var modules = map[string]config.Module{"m": {}, "other": {}}

var (
	rack1 = []config.Target{
		fileTgt("rack1-n1", "10.1.0.1:18520", "m"),
		{Name: "rack1-n2", Address: "rack1-n2.example:18520", Module: "other", Device: "mlx5_1", DevicePort: config.DefaultDevicePort},
	}
	rack2 = []config.Target{fileTgt("rack2-n1", "[fd00::21]:18520", "m")}
)

// fileTgt is a target as read from a file, where an absent device_port
// takes the default.
func fileTgt(name, addr, module string) config.Target {
	t := tgt(name, addr, module)
	t.DevicePort = config.DefaultDevicePort
	return t
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// replace writes the file as editors and config managers do: a new file
// renamed over the old one.
func replace(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	write(t, tmp, b)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestFileRead reads a good file, then each testdata file in its place:
// a bad one keeps the good targets and counts an error.
func TestFileRead(t *testing.T) {
	for _, tc := range []struct {
		file string // "" removes the file
		want []config.Target
		err  bool
	}{
		{file: "rack2.yml", want: rack2},
		{file: "empty.yml", want: nil},
		{file: "invalid-key.yml", want: rack1, err: true},
		{file: "invalid-unknown-module.yml", want: rack1, err: true},
		{file: "invalid-duplicate.yml", want: rack1, err: true},
		{file: "invalid-yaml.yml", want: rack1, err: true},
		{file: "", want: rack1, err: true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "targets.yml")
			write(t, path, testdata(t, "rack1.yml"))
			d := New(&config.Config{Modules: modules})
			f := newFileSource(d, []string{path})
			if got := f.read(); !slices.Equal(got, rack1) {
				t.Fatalf("first read: %v, want %v", got, rack1)
			}
			if tc.file == "" {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else {
				write(t, path, testdata(t, tc.file))
			}
			// Twice: a lasting error is counted at every read.
			for i := 1; i <= 2; i++ {
				if got := f.read(); !slices.Equal(got, tc.want) {
					t.Errorf("read %d: %v, want %v", i, got, tc.want)
				}
				want := 0.0
				if tc.err {
					want = float64(i)
				}
				if n := errCount(d, SourceFile); n != want {
					t.Errorf("read %d: %v errors counted, want %v", i, n, want)
				}
			}
		})
	}
}

// waitErrors waits until at least n file errors were counted.
func waitErrors(t *testing.T, d *Discoverer, source string, n float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for errCount(d, source) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%v %s errors counted after 5 s, want %v", errCount(d, source), source, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFilesFollowed edits files under a running Discoverer whose
// periodic read is too slow to matter: every change must come from a
// notification.
func TestFilesFollowed(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "rack1.yml"), filepath.Join(dir, "rack2.yml")
	write(t, p1, testdata(t, "rack1.yml"))
	write(t, p2, testdata(t, "rack2.yml"))

	// The layout of a Kubernetes ConfigMap volume: the file is a link
	// through ..data, and an update swaps ..data.
	k8s := filepath.Join(dir, "k8s")
	for _, sub := range []string{"..v1", "..v2"} {
		if err := os.MkdirAll(filepath.Join(k8s, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(k8s, "..v1", "t.yml"), []byte("- {name: k8s-a, address: 10.8.0.1:1, module: m}\n"))
	write(t, filepath.Join(k8s, "..v2", "t.yml"), []byte("- {name: k8s-b, address: 10.8.0.2:1, module: m}\n"))
	for old, link := range map[string]string{"..v1": "..data", "..data/t.yml": "t.yml"} {
		if err := os.Symlink(old, filepath.Join(k8s, link)); err != nil {
			t.Fatal(err)
		}
	}

	cfg := &config.Config{Modules: modules, Targets: config.Targets{
		Static: []config.Target{tgt("static", "10.9.0.1:1", "m")},
		Files:  []string{p1, p2, filepath.Join(k8s, "t.yml")},
	}}
	d := New(cfg, WithFileInterval(time.Hour))
	r := startRun(t, d)
	k8sA, k8sB := fileTgt("k8s-a", "10.8.0.1:1", "m"), fileTgt("k8s-b", "10.8.0.2:1", "m")
	static := tgt("static", "10.9.0.1:1", "m")
	r.want(t, "first", 0, k8sA, rack1[0], rack1[1], rack2[0], static)

	replace(t, p2, []byte("- {name: rack2-n2, address: 10.2.0.2:1, module: m}\n"))
	rack2n2 := fileTgt("rack2-n2", "10.2.0.2:1", "m")
	r.want(t, "renamed over", 5*time.Second, k8sA, rack1[0], rack1[1], rack2n2, static)

	write(t, p1, []byte("- {name: rack1-n1, address: 10.1.0.1:18520, module: m}\n"))
	r.want(t, "written in place", 5*time.Second, k8sA, rack1[0], rack2n2, static)

	n := r.count()
	write(t, p1, []byte("- {name: rack1-n1, address: 10.1.0.1:18520, module: nope}\n"))
	waitErrors(t, d, SourceFile, 1)
	write(t, p1, []byte("- {name: rack1-n1, address: 10.1.0.1 18520, module: m}\n"))
	waitErrors(t, d, SourceFile, 2)
	if got := r.count(); got != n {
		t.Errorf("invalid files handed over %d new sets; want the last good targets kept", got-n)
	}
	r.want(t, "invalid", 0, k8sA, rack1[0], rack2n2, static)

	// Static wins a name a file also uses.
	write(t, p1, []byte("- {name: static, address: 10.1.0.9:1, module: m}\n"))
	r.want(t, "emptied but for a clash", 5*time.Second, k8sA, rack2n2, static)

	tmp := filepath.Join(k8s, "..data_tmp")
	if err := os.Symlink("..v2", tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(k8s, "..data")); err != nil {
		t.Fatal(err)
	}
	r.want(t, "ConfigMap swapped", 5*time.Second, k8sB, rack2n2, static)

	r.stop(t)
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Run returned, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFilesPeriodic checks the safety net: with no notifications at all,
// the periodic read still finds a change.
func TestFilesPeriodic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.yml")
	write(t, path, testdata(t, "rack2.yml"))
	cfg := &config.Config{Modules: modules, Targets: config.Targets{Files: []string{path}}}
	d := New(cfg, WithFileInterval(20*time.Millisecond))
	d.noWatch = true
	r := startRun(t, d)
	r.want(t, "first", 0, rack2...)
	write(t, path, testdata(t, "rack1.yml"))
	r.want(t, "changed", 5*time.Second, rack1...)
}

// TestFilesLateDirectory starts with a file whose directory does not exist
// yet: an error, no targets, and the file followed once it appears, its
// directory watched from the next periodic read on.
func TestFilesLateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	path := filepath.Join(dir, "t.yml")
	cfg := &config.Config{Modules: modules, Targets: config.Targets{Files: []string{path}}}
	d := New(cfg, WithFileInterval(50*time.Millisecond))
	r := startRun(t, d)
	r.want(t, "no file", 0)
	if n := errCount(d, SourceFile); n < 1 {
		t.Errorf("%v errors counted for a missing file, want at least 1", n)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, path, testdata(t, "rack2.yml"))
	r.want(t, "created", 5*time.Second, rack2...)
}
