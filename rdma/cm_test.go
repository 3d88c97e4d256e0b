package rdma

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

func TestCMErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&CMError{Step: "connect", Peer: "10.0.0.1:7999", QP: 0, Event: CMRejected, Status: 8},
			"rdma_cm connect to 10.0.0.1:7999 (QP 0): REJECTED (status 8); likely cause: nothing listens on the peer's CM port (is the responder running, with its CM listener on that port?)"},
		{&CMError{Step: "connect", Peer: "10.0.0.1:18521", QP: 3, Event: CMRejected, Status: 28, Detail: rejectReason(28, []byte(RejectPrefix+"no test expects QP 3"))},
			"rdma_cm connect to 10.0.0.1:18521 (QP 3): REJECTED (status 28); likely cause: the peer refused the connection (its QP limit, an unknown session, or its own reason); reason 28: refused by the peer's application; the peer said: \"no test expects QP 3\""},
		{&CMError{Step: "resolve_addr", Peer: "10.0.0.9:7471", QP: 2, Waited: 10 * time.Second, Detail: "from 10.0.0.2"},
			"rdma_cm resolve_addr to 10.0.0.9:7471 (QP 2): no answer within 10s; likely cause: the peer's address did not answer neighbour resolution (ARP or ND): host down, link down, or a wrong address; from 10.0.0.2"},
		{&CMError{Step: "listen", Peer: "10.9.9.9:0", QP: -1, Errno: syscall.EADDRNOTAVAIL, Detail: "no RDMA device owns that address"},
			"rdma_cm listen to 10.9.9.9:0: cannot assign requested address; no RDMA device owns that address"},
		{&CMError{Step: "resolve_addr", Peer: "10.0.0.1:7471", QP: 0, Event: CMAddrResolved, Detail: "the CM bound the connection to rxe0 port 1, not the test's rxe1 port 1 (the address belongs to another device)"},
			"rdma_cm resolve_addr to 10.0.0.1:7471 (QP 0): ADDR_RESOLVED (status 0); the CM bound the connection to rxe0 port 1, not the test's rxe1 port 1 (the address belongs to another device)"},
		{&CMError{Step: "connect", Peer: "10.0.0.1:7471", QP: 1, Event: CMUnreachable, Status: -110},
			"rdma_cm connect to 10.0.0.1:7471 (QP 1): UNREACHABLE (status -110); likely cause: the peer did not answer: host down, link down, or the CM's packets dropped"},
		{&CMError{Step: "connect", Peer: "10.0.0.1:7471", QP: 1, Event: CMUnreachable, Status: -111},
			"rdma_cm connect to 10.0.0.1:7471 (QP 1): UNREACHABLE (status -111); likely cause: nothing listens on the peer's CM port, or the CM's packets are dropped (for iWARP, the TCP port is blocked)"},
		{&CMError{Step: "resolve_addr", Peer: "10.0.0.99:18521", QP: 0, Event: CMAddrError, Status: -110, Detail: "from 10.0.0.2"},
			"rdma_cm resolve_addr to 10.0.0.99:18521 (QP 0): ADDR_ERROR (status -110); likely cause: the peer's address did not answer neighbour resolution (ARP or ND): host down, link down, or a wrong address; from 10.0.0.2"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	var ce *CMError
	if !errors.As(error(&CMError{Step: "accept"}), &ce) {
		t.Error("errors.As does not find a CMError")
	}
}

func TestCMEventNames(t *testing.T) {
	for e, want := range map[CMEvent]string{CMAddrResolved: "ADDR_RESOLVED", CMRejected: "REJECTED", CMEstablished: "ESTABLISHED", CMTimewaitExit: "TIMEWAIT_EXIT", 16: "MULTICAST_LEAVE", 99: "EVENT_99"} {
		if e.String() != want {
			t.Errorf("%d: %q, want %q", int(e), e.String(), want)
		}
	}
}

// TestCMAddress: the CM binds to the IP address a RoCE GID carries; an
// InfiniBand or link-local GID carries none it can bind to.
func TestCMAddress(t *testing.T) {
	for _, tc := range []struct {
		gid  string
		typ  GIDType
		want string
	}{
		{"::ffff:10.0.0.2", GIDTypeRoCEv2, "10.0.0.2"},
		{"2001:db8::5", GIDTypeRoCEv2, "2001:db8::5"},
		{"fe80::1", GIDTypeRoCEv2, ""},
		{"fe80::2:c903:a:1b2c", GIDTypeIB, ""},
		{"2001:db8::1", GIDTypeIB, ""},
	} {
		var g GIDAddr
		if err := g.UnmarshalText([]byte(tc.gid)); err != nil {
			t.Fatal(err)
		}
		a, err := cmAddress("dev0", 1, g, tc.typ)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: got %v, want an error", tc.gid, a)
		case tc.want != "" && (err != nil || a.String() != tc.want):
			t.Errorf("%s: got %v, %v, want %s", tc.gid, a, err, tc.want)
		}
	}
}

func TestCMAddrAttempt(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		n    int
		left time.Duration
		want time.Duration
	}{
		{0, time.Minute, 10 * ms},
		{1, time.Minute, 20 * ms},
		{5, time.Minute, 320 * ms},
		{6, time.Minute, 500 * ms},
		{100, time.Minute, 500 * ms},
		{3, 30 * ms, 30 * ms},
		{0, 0, ms},
		{2, -time.Second, ms},
	} {
		if got := cmAddrAttempt(tc.n, tc.left); got != tc.want {
			t.Errorf("cmAddrAttempt(%d, %v) = %v, want %v", tc.n, tc.left, got, tc.want)
		}
	}
}
