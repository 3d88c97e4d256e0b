package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/exporter/prober"
	"github.com/rdmarun/rdmarun/rdma"
)

// fakeLinks records what the links a tokenTransport opens do.
type fakeLinks struct{ events []string }

type fakeLink struct {
	f     *fakeLinks
	token string
}

func (l fakeLink) Probe(context.Context) (*rdma.Result, time.Duration, error) {
	l.f.events = append(l.f.events, "probe "+l.token)
	return nil, 0, nil
}

func (l fakeLink) Settle() { l.f.events = append(l.f.events, "settle "+l.token) }

func (l fakeLink) Close() { l.f.events = append(l.f.events, "close "+l.token) }

type fakeTransport struct {
	f     *fakeLinks
	token string
}

func (t fakeTransport) Open(prober.Peer, rdma.Test, time.Duration) prober.Link {
	t.f.events = append(t.f.events, "open "+t.token)
	return fakeLink(t)
}

// TestTokenLink: a link connects with the token in force; after a
// rotation its kept session serves the probe under way, is closed once
// that probe settles, and the next probe connects with the new token.
func TestTokenLink(t *testing.T) {
	f := &fakeLinks{}
	tr := tokenTransportWith("old", func(token string) prober.Transport { return fakeTransport{f, token} })
	l := tr.Open(prober.Peer{Addr: "10.0.0.1:18520"}, rdma.Test{}, time.Minute)
	ctx := context.Background()
	_, _, _ = l.Probe(ctx)
	l.Settle()
	_, _, _ = l.Probe(ctx)
	tr.set("new")
	l.Settle()
	_, _, _ = l.Probe(ctx)
	l.Settle()
	l.Close()
	want := []string{"open old", "probe old", "settle old", "probe old", "settle old", "close old", "open new", "probe new", "settle new", "close new"}
	if !slices.Equal(f.events, want) {
		t.Errorf("events\n %q\nwant\n %q", f.events, want)
	}
	if tr.get() != "new" {
		t.Errorf("token in force %q", tr.get())
	}
}
