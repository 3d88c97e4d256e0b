package soak

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseProcStatus(t *testing.T) {
	for _, c := range []struct {
		file    string
		want    ProcStatus
		wantErr string
	}{
		{file: "live.txt", want: ProcStatus{Threads: 1, RSSBytes: 2096 << 10}},
		{file: "no-rss.txt", wantErr: "no Threads or VmRSS line"},
		{file: "no-threads.txt", wantErr: "no Threads or VmRSS line"},
		{file: "rss-not-kb.txt", wantErr: "want a number and kB"},
		{file: "zero-threads.txt", wantErr: "want a positive count of threads"},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "status", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseProcStatus(b)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestParseRDMAResources(t *testing.T) {
	for _, c := range []struct {
		file    string
		want    map[string]int
		wantErr string
	}{
		{file: "two-devices.json", want: map[string]int{"pd": 4, "cq": 13, "qp": 13, "cm_id": 0, "mr": 5, "ctx": 2, "srq": 0}},
		{file: "no-devices.json", want: map[string]int{}},
		{file: "not-a-count.json", wantErr: `pd is "many", want a count`},
		{file: "negative.json", wantErr: "qp is -1, want a count"},
		{file: "no-ifname.json", wantErr: "a device without ifname"},
		{file: "not-json.txt", wantErr: "rdma resource show:"},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "rdma", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseRDMAResources(b)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || !maps.Equal(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestGrowth(t *testing.T) {
	atRest := func(handlers int) Starters {
		return Starters{"main": {Count: 1, States: map[string]int{"IO wait": 1}},
			"example.com/peer.(*Server).Serve": {Count: handlers, States: map[string]int{"select": handlers}}}
	}
	base := Sample{FDs: 7, Goroutines: 12, Threads: 8, RSSBytes: 20 << 20, RDMA: map[string]int{"qp": 2, "mr": 0}, Stacks: atRest(1)}
	same := base
	// go_goroutines read higher in a scrape is the scrape's own; only
	// the goroutines at rest count.
	same.Goroutines = 14
	if g := Growth(base, same, 20, 52<<20); len(g) != 0 {
		t.Errorf("the baseline itself: %v", g)
	}
	// Threads and RSS above the idle value but within their bounds are
	// the runtime's pools, not growth.
	settled := base
	settled.Threads, settled.RSSBytes = 14, 30<<20
	if g := Growth(base, settled, 20, 52<<20); len(g) != 0 {
		t.Errorf("within the bounds: %v", g)
	}
	leaked := Sample{FDs: 8, Goroutines: 13, Threads: 21, RSSBytes: 53 << 20, RDMA: map[string]int{"qp": 3, "mr": 1, "pd": 1}, Stacks: atRest(3)}
	got := strings.Join(Growth(base, leaked, 20, 52<<20), "; ")
	for _, want := range []string{"fds 8, baseline 7", "3 goroutines started by example.com/peer.(*Server).Serve, 1 at idle", "threads 21, bound 20", "RSS 55574528 bytes", "RDMA qp 3, baseline 2", "RDMA mr 1, baseline 0", "RDMA pd 1, baseline 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("growth %q lacks %q", got, want)
		}
	}
}

func FuzzParseProcStatus(f *testing.F) {
	for _, name := range []string{"live.txt", "no-rss.txt", "rss-not-kb.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "status", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseProcStatus(b)
		if err == nil && (st.Threads < 1 || st.RSSBytes < 0) {
			t.Fatalf("accepted %q as %+v", b, st)
		}
	})
}

func FuzzParseRDMAResources(f *testing.F) {
	for _, name := range []string{"two-devices.json", "no-ifname.json", "not-a-count.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "rdma", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		counts, err := ParseRDMAResources(b)
		if err != nil {
			return
		}
		for k, n := range counts {
			if n < 0 || k == "ifindex" || k == "ifname" {
				t.Fatalf("accepted %q as %v", b, counts)
			}
		}
	})
}
