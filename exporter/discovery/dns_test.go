package discovery

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// fakeResolver answers from maps the test changes; a name in neither map
// does not exist.
type fakeResolver struct {
	mu    sync.Mutex
	hosts map[string][]string
	srvs  map[string][]*net.SRV
	fail  map[string]error
	// block makes every lookup wait for its context, as one to a dead
	// server does.
	block bool
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{hosts: map[string][]string{}, srvs: map[string][]*net.SRV{}, fail: map[string]error{}}
}

var errNoSuchHost = errors.New("no such host")

func (f *fakeResolver) lookup(ctx context.Context, name string) error {
	f.mu.Lock()
	block, err := f.block, f.fail[name]
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (f *fakeResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	if err := f.lookup(ctx, host); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.hosts[host]
	if !ok {
		return nil, errNoSuchHost
	}
	return slices.Clone(a), nil
}

func (f *fakeResolver) LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error) {
	if service != "" || proto != "" {
		return "", nil, errors.New("want the name looked up as written")
	}
	if err := f.lookup(ctx, name); err != nil {
		return "", nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, ok := f.srvs[name]
	if !ok {
		return "", nil, errNoSuchHost
	}
	return name, slices.Clone(recs), nil
}

func (f *fakeResolver) set(fn func(f *fakeResolver)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func srv(target string, port uint16) *net.SRV { return &net.SRV{Target: target, Port: port} }

// TestDNSRefresh runs a name through a series of answers; each step's
// targets are what probing would use after it.
func TestDNSRefresh(t *testing.T) {
	const host, srvName = "peers.example", "_rdma._tcp.example"
	hostT := func(ip, addr string) config.Target {
		return config.Target{Name: host + "/" + ip, Address: addr, Module: "m", Device: "rxe0", DevicePort: 2}
	}
	srvT := func(hostPort, addr string) config.Target {
		return config.Target{Name: srvName + "/" + hostPort, Address: addr, Module: "m"}
	}
	type step struct {
		what   string
		answer func(f *fakeResolver)
		want   []config.Target
		errs   float64 // errors counted so far
	}
	for _, tc := range []struct {
		name  string
		dns   config.DNSTarget
		steps []step
	}{
		{
			name: "A and AAAA",
			dns:  config.DNSTarget{Name: host, Port: 18520, Module: "m", Device: "rxe0", DevicePort: 2, Refresh: time.Minute},
			steps: []step{
				{what: "no such name yet", answer: func(f *fakeResolver) {}, want: nil, errs: 1},
				{
					what:   "addresses, one twice",
					answer: func(f *fakeResolver) { f.hosts[host] = []string{"10.0.0.2", "fd00::1", "10.0.0.1", "10.0.0.2"} },
					want:   []config.Target{hostT("10.0.0.1", "10.0.0.1:18520"), hostT("10.0.0.2", "10.0.0.2:18520"), hostT("fd00::1", "[fd00::1]:18520")},
					errs:   1,
				},
				{
					what:   "a failed lookup keeps the last answer",
					answer: func(f *fakeResolver) { f.fail[host] = errors.New("i/o timeout") },
					want:   []config.Target{hostT("10.0.0.1", "10.0.0.1:18520"), hostT("10.0.0.2", "10.0.0.2:18520"), hostT("fd00::1", "[fd00::1]:18520")},
					errs:   2,
				},
				{
					what:   "a new answer replaces it",
					answer: func(f *fakeResolver) { delete(f.fail, host); f.hosts[host] = []string{"10.0.0.3"} },
					want:   []config.Target{hostT("10.0.0.3", "10.0.0.3:18520")},
					errs:   2,
				},
				{
					what:   "an empty answer is an answer",
					answer: func(f *fakeResolver) { f.hosts[host] = nil },
					want:   []config.Target{},
					errs:   2,
				},
			},
		},
		{
			name: "SRV",
			dns:  config.DNSTarget{Name: srvName, Module: "m", Refresh: time.Minute},
			steps: []step{
				{
					what: "records, resolved",
					answer: func(f *fakeResolver) {
						f.srvs[srvName] = []*net.SRV{
							srv("n2.example.", 18600), srv("n1.example.", 18520),
							srv("n1.example.", 18520), // twice: one target
							srv(".", 18520),           // "no service here"
							srv("n3.example.", 0),
						}
						f.hosts["n1.example"] = []string{"fd00::11", "10.0.1.2", "10.0.1.1"}
						f.hosts["n2.example"] = []string{"fd00::12"}
					},
					want: []config.Target{srvT("n1.example:18520", "10.0.1.1:18520"), srvT("n2.example:18600", "[fd00::12]:18600")},
				},
				{
					what: "a host that fails keeps its target, a new one that fails is left out",
					answer: func(f *fakeResolver) {
						f.srvs[srvName] = append(f.srvs[srvName], srv("n4.example.", 18520))
						f.fail["n2.example"] = errors.New("server misbehaving")
						f.hosts["n1.example"] = []string{"10.0.1.5"}
					},
					want: []config.Target{srvT("n1.example:18520", "10.0.1.5:18520"), srvT("n2.example:18600", "[fd00::12]:18600")},
					errs: 1,
				},
				{
					what:   "a failed SRV lookup keeps the last answer",
					answer: func(f *fakeResolver) { f.fail[srvName] = errors.New("i/o timeout") },
					want:   []config.Target{srvT("n1.example:18520", "10.0.1.5:18520"), srvT("n2.example:18600", "[fd00::12]:18600")},
					errs:   2,
				},
				{
					what: "recovered, with a record gone",
					answer: func(f *fakeResolver) {
						clear(f.fail)
						f.srvs[srvName] = []*net.SRV{srv("n2.example", 18600)}
					},
					want: []config.Target{srvT("n2.example:18600", "[fd00::12]:18600")},
					errs: 2,
				},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := newFakeResolver()
			d := New(&config.Config{}, WithResolver(res))
			s := newDNSSource(d, tc.dns)
			for _, st := range tc.steps {
				res.set(st.answer)
				got := s.refresh(context.Background())
				if !slices.Equal(got, st.want) || (got == nil) != (st.want == nil) {
					t.Errorf("%s: targets\n%#v\nwant\n%#v", st.what, got, st.want)
				}
				if n := errCount(d, SourceDNS); n != st.errs {
					t.Errorf("%s: %v errors counted, want %v", st.what, n, st.errs)
				}
			}
		})
	}
}

// TestDNSRun follows a name through Run: changes show, a failure keeps the
// last answer, and Run stops even while a lookup hangs.
func TestDNSRun(t *testing.T) {
	res := newFakeResolver()
	res.hosts["peers"] = []string{"10.0.0.1"}
	cfg := &config.Config{Targets: config.Targets{
		Static: []config.Target{tgt("static", "10.9.0.1:1", "m")},
		DNS:    []config.DNSTarget{{Name: "peers", Port: 7, Module: "m", Refresh: 20 * time.Millisecond}},
	}}
	d := New(cfg, WithResolver(res), WithLookupTimeout(time.Second))
	r := startRun(t, d)
	r.want(t, "first", 0, tgt("peers/10.0.0.1", "10.0.0.1:7", "m"), tgt("static", "10.9.0.1:1", "m"))

	res.set(func(f *fakeResolver) { f.hosts["peers"] = []string{"10.0.0.2", "10.0.0.1"} })
	r.want(t, "grown", 5*time.Second, tgt("peers/10.0.0.1", "10.0.0.1:7", "m"), tgt("peers/10.0.0.2", "10.0.0.2:7", "m"), tgt("static", "10.9.0.1:1", "m"))
	n := r.count()

	res.set(func(f *fakeResolver) { f.fail["peers"] = errors.New("SERVFAIL") })
	deadline := time.Now().Add(5 * time.Second)
	for errCount(d, SourceDNS) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("no failed lookups counted within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := r.count(); got != n {
		t.Errorf("failed lookups handed over %d new sets; want the last answer kept", got-n)
	}

	// A hanging lookup is cut by the lookup timeout, and by the end of Run.
	res.set(func(f *fakeResolver) { f.block = true })
	time.Sleep(50 * time.Millisecond)
	r.stop(t)
}

// TestRunStopsDuringFirstLookup ends Run while the first answer is still
// awaited: it must neither hand over a set nor hang.
func TestRunStopsDuringFirstLookup(t *testing.T) {
	res := newFakeResolver()
	res.block = true
	cfg := &config.Config{Targets: config.Targets{DNS: []config.DNSTarget{{Name: "_x._tcp.example", Module: "m", Refresh: time.Minute}}}}
	r := startRun(t, New(cfg, WithResolver(res), WithLookupTimeout(time.Minute)))
	time.Sleep(20 * time.Millisecond)
	r.stop(t)
	if n := r.count(); n != 0 {
		t.Errorf("%d sets handed over after the end, want 0", n)
	}
}

// TestFirstLookupTimeout checks that a server that never answers delays
// the first set by the lookup timeout only.
func TestFirstLookupTimeout(t *testing.T) {
	res := newFakeResolver()
	res.block = true
	cfg := &config.Config{Targets: config.Targets{
		Static: []config.Target{tgt("static", "10.9.0.1:1", "m")},
		DNS:    []config.DNSTarget{{Name: "peers", Port: 7, Module: "m", Refresh: time.Minute}},
	}}
	d := New(cfg, WithResolver(res), WithLookupTimeout(50*time.Millisecond))
	r := startRun(t, d)
	r.want(t, "static only", 5*time.Second, tgt("static", "10.9.0.1:1", "m"))
	if n := errCount(d, SourceDNS); n != 1 {
		t.Errorf("%v errors counted, want 1", n)
	}
}
