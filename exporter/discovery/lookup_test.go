package discovery

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// TestLookup resolves names once, as a caller outside the exporter does:
// the same targets a refresh would give, and every failure reported.
func TestLookup(t *testing.T) {
	res := newFakeResolver()
	res.hosts["peers.example"] = []string{"10.0.0.2", "fd00::1", "10.0.0.1"}
	res.srvs["_rdmarun._tcp.example"] = []*net.SRV{srv("n2.example.", 18600), srv("n1.example.", 18520), srv(".", 0)}
	res.hosts["n1.example"] = []string{"fd00::11", "10.0.1.1"}
	res.hosts["n2.example"] = []string{"10.0.1.2"}
	res.srvs["_half._tcp.example"] = []*net.SRV{srv("n1.example", 18520), srv("gone.example", 18520)}
	target := func(name, addr string) config.Target { return config.Target{Name: name, Address: addr} }
	for _, tc := range []struct {
		name    string
		t       config.DNSTarget
		want    []config.Target
		wantErr string
	}{
		{name: "A and AAAA", t: config.DNSTarget{Name: "peers.example", Port: 18520}, want: []config.Target{
			target("peers.example/10.0.0.1", "10.0.0.1:18520"),
			target("peers.example/10.0.0.2", "10.0.0.2:18520"),
			target("peers.example/fd00::1", "[fd00::1]:18520"),
		}},
		{name: "SRV", t: config.DNSTarget{Name: "_rdmarun._tcp.example"}, want: []config.Target{
			target("_rdmarun._tcp.example/n1.example:18520", "10.0.1.1:18520"),
			target("_rdmarun._tcp.example/n2.example:18600", "10.0.1.2:18600"),
		}},
		{name: "SRV host missing", t: config.DNSTarget{Name: "_half._tcp.example"}, want: []config.Target{
			target("_half._tcp.example/n1.example:18520", "10.0.1.1:18520"),
		}, wantErr: "SRV host gone.example: no such host"},
		{name: "no such name", t: config.DNSTarget{Name: "nothing.example", Port: 1}, wantErr: "no such host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Lookup(context.Background(), res, tc.t)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("targets\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

// A lookup that hangs ends with its context.
func TestLookupDeadline(t *testing.T) {
	res := newFakeResolver()
	res.block = true
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Lookup(ctx, res, config.DNSTarget{Name: "peers.example", Port: 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v after a 50ms deadline", d)
	}
	if err != nil && strings.Contains(err.Error(), "SRV") {
		t.Errorf("error %v: an A/AAAA name must not be looked up as SRV", err)
	}
}
