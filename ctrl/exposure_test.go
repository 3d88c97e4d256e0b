package ctrl

import (
	"errors"
	"testing"
)

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		listen string
		want   bool
	}{
		{"127.0.0.1:18520", true},
		{"127.3.2.1:18520", true},
		{"[::1]:18520", true},
		{"localhost:18520", true},
		{":18520", false},
		{"0.0.0.0:18520", false},
		{"[::]:18520", false},
		{"10.0.0.1:18520", false},
		{"node-a:18520", false},
		{"no-port", false},
	} {
		if got := Loopback(tc.listen); got != tc.want {
			t.Errorf("Loopback(%q) = %v, want %v", tc.listen, got, tc.want)
		}
	}
}

func TestCheckAuthenticated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen string
		token  string
		tls    TLSConfig
		open   bool
	}{
		{"network, nothing", ":18520", "", TLSConfig{}, true},
		{"network, server TLS only", "10.0.0.1:18520", "", TLSConfig{CertFile: "c", KeyFile: "k"}, true},
		{"network, token", ":18520", "s3cret", TLSConfig{}, false},
		{"network, client certificates", ":18520", "", TLSConfig{CertFile: "c", KeyFile: "k", CAFile: "ca"}, false},
		{"loopback, nothing", "127.0.0.1:18520", "", TLSConfig{}, false},
	} {
		err := CheckAuthenticated(tc.listen, tc.token, tc.tls)
		if got := errors.Is(err, ErrUnauthenticated); got != tc.open {
			t.Errorf("%s: CheckAuthenticated = %v, want open %v", tc.name, err, tc.open)
		}
	}
}
