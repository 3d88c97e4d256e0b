package ctrl

import "testing"

func TestWithDefaultPort(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"node1", "node1:" + DefaultPort},
		{"node1:1", "node1:1"},
		{"10.0.0.1", "10.0.0.1:" + DefaultPort},
		{"fd00::3", "[fd00::3]:" + DefaultPort},
		{"[fd00::3]", "[fd00::3]:" + DefaultPort},
		{"[fd00::3]:7", "[fd00::3]:7"},
		// Empty dials this host, as net.Dial reads ":port".
		{"", ":" + DefaultPort},
	} {
		if got := WithDefaultPort(tc.in); got != tc.want {
			t.Errorf("WithDefaultPort(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
