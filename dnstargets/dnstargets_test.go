package dnstargets

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"
)

// fakeResolver answers from maps; a name in neither does not exist.
type fakeResolver struct {
	hosts map[string][]string
	srvs  map[string][]*net.SRV
	// block makes every lookup wait for its context, as one to a dead
	// server does.
	block bool
}

var errNoSuchHost = errors.New("no such host")

func (f *fakeResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if a, ok := f.hosts[host]; ok {
		return slices.Clone(a), nil
	}
	return nil, errNoSuchHost
}

func (f *fakeResolver) LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error) {
	if service != "" || proto != "" {
		return "", nil, errors.New("want the name looked up as written")
	}
	if f.block {
		<-ctx.Done()
		return "", nil, ctx.Err()
	}
	if r, ok := f.srvs[name]; ok {
		return name, slices.Clone(r), nil
	}
	return "", nil, errNoSuchHost
}

func srv(target string, port uint16) *net.SRV { return &net.SRV{Target: target, Port: port} }

func TestLookup(t *testing.T) {
	res := &fakeResolver{
		hosts: map[string][]string{
			"peers.example": {"10.0.0.2", "fd00::1", "10.0.0.1", "10.0.0.2"},
			"n1.example":    {"fd00::11", "10.0.1.1"},
			"n2.example":    {"10.0.1.2"},
			"empty.example": {},
		},
		srvs: map[string][]*net.SRV{
			"_rdmarun._tcp.example": {srv("n2.example.", 18600), srv("n1.example.", 18520), srv(".", 0), srv("n1.example", 18520)},
			"_half._tcp.example":    {srv("n1.example", 18520), srv("gone.example", 18520), srv("empty.example", 1)},
			"_off._tcp.example":     {srv(".", 0)},
		},
	}
	errGone := "SRV host gone.example: no such host"
	errEmpty := "SRV host empty.example: no addresses"
	for _, tc := range []struct {
		name    string
		port    int
		want    []Target
		wantErr string
	}{
		{name: "peers.example", port: 18520, want: []Target{
			{Host: "10.0.0.1", Addr: "10.0.0.1:18520"},
			{Host: "10.0.0.2", Addr: "10.0.0.2:18520"},
			{Host: "fd00::1", Addr: "[fd00::1]:18520"},
		}},
		// The port is the records', whatever the caller gives.
		{name: "_rdmarun._tcp.example", port: 1, want: []Target{
			{Host: "n1.example:18520", Addr: "10.0.1.1:18520"},
			{Host: "n2.example:18600", Addr: "10.0.1.2:18600"},
		}},
		{name: "_half._tcp.example", want: []Target{
			{Host: "empty.example:1", Err: errors.New(errEmpty)},
			{Host: "gone.example:18520", Err: errors.New(errGone)},
			{Host: "n1.example:18520", Addr: "10.0.1.1:18520"},
		}, wantErr: errGone + "\n" + errEmpty},
		{name: "_off._tcp.example", want: []Target{}},
		{name: "nothing.example", port: 1, wantErr: "no such host"},
		{name: "_nothing._tcp.example", wantErr: "no such host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Lookup(context.Background(), res, tc.name, tc.port)
			if (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if (got == nil) != (tc.want == nil) || !slices.EqualFunc(got, tc.want, func(a, b Target) bool {
				return a.Host == b.Host && a.Addr == b.Addr && (a.Err == nil) == (b.Err == nil) && (a.Err == nil || a.Err.Error() == b.Err.Error())
			}) {
				t.Errorf("targets\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// A lookup that hangs ends with its context, SRV hosts included.
func TestLookupDeadline(t *testing.T) {
	for _, name := range []string{"peers.example", "_rdmarun._tcp.example"} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, err := Lookup(ctx, &fakeResolver{block: true}, name, 1)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: error %v, want the deadline", name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v after a 50ms deadline", name, d)
		}
	}
}

func TestIsSRV(t *testing.T) {
	for name, want := range map[string]bool{"_rdmarun._tcp.example": true, "peers.example": false, "": false} {
		if IsSRV(name) != want {
			t.Errorf("IsSRV(%q) = %v", name, !want)
		}
	}
}

func TestPreferred(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"10.0.0.2"}, "10.0.0.2"},
		{[]string{"fd00::1", "10.0.0.9", "10.0.0.10"}, "10.0.0.9"},
		{[]string{"fd00::2", "fd00::1"}, "fd00::1"},
		{[]string{"not-an-ip", "fd00::1"}, "fd00::1"},
	} {
		if got := preferred(tc.in); got != tc.want {
			t.Errorf("preferred(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
