package sysfs

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"testing"
)

func TestReadPortNotDirectory(t *testing.T) {
	_, err := ReadPort("testdata/odd", "bad0", 3, Counters)
	want := "testdata/odd/bad0/ports/3 is not a directory; run `rdmarun devices` to list RDMA devices and their ports"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

// failingFS answers reads of the named files with err, as drivers do for
// counters they list but do not implement.
type failingFS struct {
	fs.FS
	fail map[string]error
}

func (f failingFS) ReadFile(name string) ([]byte, error) {
	if err, ok := f.fail[name]; ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return fs.ReadFile(f.FS, name)
}

// TestReadPortSkips: each unreadable or malformed counter file is reported
// on its own, and the rest of the port is still read.
func TestReadPortSkips(t *testing.T) {
	unsupported := errors.New("operation not supported")
	fsys := failingFS{
		FS: os.DirFS("testdata/odd"),
		fail: map[string]error{
			"bad0/ports/1/hw_counters/unsupported_stat": unsupported,
		},
	}
	p, err := readNamedPort(fsys, "testdata/odd", "bad0", 1, Counters)
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, e := range p.Errors {
		skipped = append(skipped, e.Path)
	}
	slices.Sort(skipped)
	wantSkipped := []string{"counters/VL15_dropped", "counters/port_rcv_errors", "hw_counters/unsupported_stat"}
	if !slices.Equal(skipped, wantSkipped) {
		t.Errorf("Errors = %q, want %q", skipped, wantSkipped)
	}
	if err := p.Err("hw_counters/unsupported_stat"); !errors.Is(err, unsupported) {
		t.Errorf("the driver's error is not kept: %v", err)
	}
	// Whitespace around a value is the file's formatting, not an error;
	// the nested directory is not a counter.
	if want := map[string]uint64{"port_xmit_data": 42}; !maps.Equal(p.Counters, want) {
		t.Errorf("Counters = %v, want %v", p.Counters, want)
	}
	if want := map[string]uint64{"lifespan": 10, "rdma_sends": 7}; !maps.Equal(p.HWCounters, want) {
		t.Errorf("HWCounters = %v, want %v", p.HWCounters, want)
	}
}

// TestReadPortUnreadableDirectory: a counters/ directory that cannot be
// listed is reported as one file; hw_counters/ is still read.
func TestReadPortUnreadableDirectory(t *testing.T) {
	fsys := failingReadDir{FS: os.DirFS("testdata/odd"), dir: "bad0/ports/1/counters"}
	p, err := readNamedPort(fsys, "testdata/odd", "bad0", 1, Counters)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Errors) != 1 || p.Errors[0].Path != "counters" || !errors.Is(p.Errors[0], fs.ErrPermission) {
		t.Errorf("Errors = %v, want only counters: permission denied", p.Errors)
	}
	if len(p.Counters) != 0 || p.HWCounters["rdma_sends"] != 7 {
		t.Errorf("Counters = %v, HWCounters = %v", p.Counters, p.HWCounters)
	}
}

type failingReadDir struct {
	fs.FS
	dir string
}

func (f failingReadDir) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == f.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrPermission}
	}
	return fs.ReadDir(f.FS, name)
}
