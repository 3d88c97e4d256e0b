package discovery

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// zone is a tiny authoritative server's data, changed by the test while
// the server runs.
type zone struct {
	mu  sync.Mutex
	rrs map[string][]string // "name TYPE" -> records in zone-file text
}

func (z *zone) set(name string, typ uint16, rrs ...string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.rrs[name+" "+dns.TypeToString[typ]] = rrs
}

func (z *zone) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	resp := new(dns.Msg)
	resp.SetReply(req)
	resp.Authoritative = true
	z.mu.Lock()
	defer z.mu.Unlock()
	known := false
	for _, q := range req.Question {
		name := strings.ToLower(q.Name)
		for k, rrs := range z.rrs {
			if strings.HasPrefix(k, name+" ") {
				known = true
				if k != name+" "+dns.TypeToString[q.Qtype] {
					continue
				}
				for _, s := range rrs {
					rr, err := dns.NewRR(s)
					if err != nil {
						panic(err) // the test's own records
					}
					resp.Answer = append(resp.Answer, rr)
				}
			}
		}
	}
	if !known {
		resp.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(resp)
}

// startDNS serves z on a UDP port of 127.0.0.1 and returns a real Go
// resolver that asks only it.
func startDNS(t *testing.T, z *zone) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: z, NotifyStartedFunc: func() { close(started) }}
	served := make(chan error, 1)
	go func() { served <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-served:
		t.Fatalf("DNS server: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the DNS server did not start within 5 s")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.ShutdownContext(ctx); err != nil {
			t.Errorf("DNS server shutdown: %v", err)
		}
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Error("the DNS server did not stop within 5 s")
		}
	})
	addr := pc.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", addr)
		},
	}
}

// TestRealResolver runs discovery over the Go resolver and a real DNS
// server, so the name handling (trailing dots, an SRV name looked up as
// written, AAAA next to A) is checked against the real thing.
func TestRealResolver(t *testing.T) {
	z := &zone{rrs: map[string][]string{}}
	z.set("peers.rdma.test.", dns.TypeA, "peers.rdma.test. 1 IN A 10.0.0.1", "peers.rdma.test. 1 IN A 10.0.0.2")
	z.set("peers.rdma.test.", dns.TypeAAAA, "peers.rdma.test. 1 IN AAAA fd00::1")
	z.set("_rdma._tcp.rdma.test.", dns.TypeSRV,
		"_rdma._tcp.rdma.test. 1 IN SRV 0 0 18520 n1.rdma.test.",
		"_rdma._tcp.rdma.test. 1 IN SRV 0 0 18600 n2.rdma.test.")
	z.set("n1.rdma.test.", dns.TypeA, "n1.rdma.test. 1 IN A 10.0.1.1")
	z.set("n1.rdma.test.", dns.TypeAAAA, "n1.rdma.test. 1 IN AAAA fd00::11")
	z.set("n2.rdma.test.", dns.TypeAAAA, "n2.rdma.test. 1 IN AAAA fd00::12")
	res := startDNS(t, z)

	cfg := &config.Config{
		Modules: map[string]config.Module{"m": {}},
		Targets: config.Targets{DNS: []config.DNSTarget{
			{Name: "peers.rdma.test", Port: 18520, Module: "m", Refresh: time.Second},
			{Name: "_rdma._tcp.rdma.test", Module: "m", Device: "rxe0", Refresh: time.Second},
		}},
	}
	h := startRun(t, New(cfg, WithResolver(res), WithLookupTimeout(2*time.Second)))

	a := func(ip string) config.Target {
		return config.Target{Name: "peers.rdma.test/" + ip, Address: net.JoinHostPort(ip, "18520"), Module: "m"}
	}
	srv := func(hostPort, addr string) config.Target {
		return config.Target{Name: "_rdma._tcp.rdma.test/" + hostPort, Address: addr, Module: "m", Device: "rxe0"}
	}
	h.want(t, "first answer", 0,
		srv("n1.rdma.test:18520", "10.0.1.1:18520"), // IPv4 preferred
		srv("n2.rdma.test:18600", "[fd00::12]:18600"),
		a("10.0.0.1"), a("10.0.0.2"), a("fd00::1"),
	)

	z.set("peers.rdma.test.", dns.TypeA, "peers.rdma.test. 1 IN A 10.0.0.2", "peers.rdma.test. 1 IN A 10.0.0.3")
	z.set("_rdma._tcp.rdma.test.", dns.TypeSRV, "_rdma._tcp.rdma.test. 1 IN SRV 0 0 18520 n1.rdma.test.")
	h.want(t, "changed answer", 10*time.Second,
		srv("n1.rdma.test:18520", "10.0.1.1:18520"),
		a("10.0.0.2"), a("10.0.0.3"), a("fd00::1"),
	)
	h.stop(t)
}
