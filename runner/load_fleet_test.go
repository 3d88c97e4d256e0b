package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/fleet"
)

// TestLoadFleetInvalid loads each bad fleet file through Load, which
// resolves hosts, so problems found only once the hosts are known are
// covered beside those Parse finds.
func TestLoadFleetInvalid(t *testing.T) {
	for _, tc := range []struct {
		file string
		want string // the whole error
		// match, for the one error whose tail is the system resolver's
		// own words, is a regular expression instead.
		match string
	}{
		{file: "invalid-duplicate-hosts.yaml", want: `
invalid-duplicate-hosts.yaml:6:5: hosts: host node1:18520 dials node1:18520, as host node1 does (line 3); list each host once
invalid-duplicate-hosts.yaml:7:5: hosts: host node2:18521 is listed twice (first at line 4); list each host once`},
		{file: "invalid-dns-unreachable.yaml", match: `^invalid-dns-unreachable\.yaml:3:14: hosts: DNS name rdmarun-fleet\.invalid (did not resolve: .+; check the name|: no answer within 10s; check the resolver), or list the hosts$`},
		{file: "invalid-rail-unequal.yaml", want: `
invalid-rail-unequal.yaml:6:10: pattern: rail needs the same number of devices on every host: node1 has 2, node3 has 1; list the same count on each`},
		{file: "invalid-rail-no-devices.yaml", want: `
invalid-rail-no-devices.yaml:3:10: pattern: rail pairs device i of each host with device i of the others, and no host lists devices; write devices: [mlx5_0, mlx5_1] for every host, or a host's own as {name: node1, devices: [mlx5_0, mlx5_1]}`},
		{file: "invalid-incast-one-host.yaml", want: `
invalid-incast-one-host.yaml:3:10: pattern: incast needs at least 2 hosts, got 1; add hosts or test one host's devices with a single-pair scenario`},
		{file: "invalid-incast-parallel.yaml", want: `
invalid-incast-parallel.yaml:4:11: parallel: 2 is below the 3 senders of an incast round, which must run together; raise parallel to 3 or remove it`},
		{file: "invalid-no-pair.yaml", want: `
invalid-no-pair.yaml:4:8: pairs: empty list, so pattern pairs yields no pair; write a list of [initiator, responder] host names, such as [[node1, node2], [node3, node1]]`},
		{file: "invalid-unknown-pair-host.yaml", want: `
invalid-unknown-pair-host.yaml:6:13: pairs: host "nod1" is not in hosts:; did you mean "node1"?
invalid-unknown-pair-host.yaml:7:6: pairs: node2 with itself; a pair needs two hosts
invalid-unknown-pair-host.yaml:8:6: pairs: node1 -> node2 is listed twice (first at line 5); list each pair once
invalid-unknown-pair-host.yaml:9:6: pairs: host "node4" is not in hosts:; did you mean "node1", "node2" or "node3"?`},
		{file: "invalid-pattern.yaml", want: `
invalid-pattern.yaml:3:10: pattern: "allpairs" is not a pattern; write all-pairs, ring, pairs, rail or incast; did you mean "all-pairs"?`},
		{file: "invalid-ranges.yaml", want: `
invalid-ranges.yaml:3:11: parallel: -1 is out of range; write the most pairs to run at once, or 0 for the default (512)
invalid-ranges.yaml:4:10: confirm: 11 is out of range; write how many times to re-run a bad pair before naming suspects, from 0 to 10
invalid-ranges.yaml:5:13: lag_factor: 1 is out of range; write a factor above 1 (a pair lags when that many times worse than the fleet median), such as 2`},
		{file: "invalid-one-pair-keys.yaml", want: `
invalid-one-pair-keys.yaml:2:1: peer: does not go with hosts:; a fleet scenario runs between its hosts; remove peer: (or hosts: to test one pair)
invalid-one-pair-keys.yaml:3:1: device: does not go with hosts:; use devices: for every host, or a host's own as {name: node1, devices: [mlx5_0]}
invalid-one-pair-keys.yaml:4:1: peer_device: does not go with hosts:; use devices: for every host, or a host's own as {name: node1, devices: [mlx5_0]}`},
		{file: "invalid-hostfile.yaml", want: `
invalid-hostfile.yaml:2:15: hosts: testdata/fleet/duplicate.hosts:4:1: host node2:18520 is listed twice (lines 3 and 4); remove one`},
		{file: "invalid-hostfile-missing.yaml", want: `
invalid-hostfile-missing.yaml:3:9: hosts: cannot read the hostfile: open testdata/fleet/no-such.hosts: no such file or directory; a relative path starts at the scenario's directory`},
		{file: "invalid-group-by-missing.yaml", want: `
invalid-group-by-missing.yaml:5:5: hosts: host node3 has no label rack, which group_by: groups by; add labels: {rack: VALUE} to it, or group by another label`},
		{file: "invalid-group-by-unknown.yaml", want: `
invalid-group-by-unknown.yaml:3:11: group_by: the hosts of hostfile racks.hosts: no host has the label rak; the hosts' labels are rack, rail`},
		{file: "invalid-labels.yaml", want: `
invalid-labels.yaml:3:28: labels: label rack=r 1 has ' '; a value holds letters, digits, '_', '-', '.', ':' and '/'
invalid-labels.yaml:4:27: labels: want a mapping of label to value, not a list; write labels: {rack: r03, rail: 1}
invalid-labels.yaml:5:28: labels: slots is a hostfile key, not a label; name the label otherwise
invalid-labels.yaml:6:11: group_by: label key "1rack" starts with '1'; start it with a letter, as in rack=r03; write a host label such as rack, given as rack=r03 after the host in a hostfile or labels: {rack: r03} in the host list`},
		{file: "invalid-without-hosts.yaml", want: `
invalid-without-hosts.yaml:3:1: pattern: applies to a fleet scenario only; add hosts: to run on a fleet, or remove pattern:
invalid-without-hosts.yaml:4:1: confirm: applies to a fleet scenario only; add hosts: to run on a fleet, or remove confirm:`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			start := time.Now()
			_, err := Load(filepath.Join("testdata", "fleet", tc.file), nil)
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error is a %T, want ErrorList", err)
			}
			for _, e := range list {
				if e.File == "" || e.Line == 0 || e.Column == 0 {
					t.Errorf("%q lacks file:line:column", e)
				}
			}
			// Errors name the file as Load was given it; the table
			// leaves out the directory.
			got := strings.ReplaceAll(err.Error(), "testdata/fleet/invalid-", "invalid-")
			if tc.match != "" {
				if !regexp.MustCompile(tc.match).MatchString(got) {
					t.Errorf("got\n%s\nwant a match of\n%s", got, tc.match)
				}
			} else if want := strings.TrimPrefix(tc.want, "\n"); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			// The one lookup here is bounded by its deadline.
			if d := time.Since(start); d > dnsTimeout+5*time.Second {
				t.Errorf("Load took %v", d)
			}
		})
	}
}

// Every invalid fleet file has its expected message in TestLoadFleetInvalid.
func TestFleetInvalidFilesCovered(t *testing.T) {
	src, err := os.ReadFile("load_fleet_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/fleet/invalid-*.yaml")
	if len(files) == 0 {
		t.Fatal("no invalid fleet files")
	}
	for _, f := range files {
		if !bytes.Contains(src, []byte(`file: "`+filepath.Base(f)+`"`)) {
			t.Errorf("%s has no expected error in TestLoadFleetInvalid", f)
		}
	}
}

const fleetCase = "cases:\n  - {name: c, op: write, measure: latency}\n"

// TestParseFleet checks the fleet keys one rule at a time, on inline
// lists, which Parse plans completely.
func TestParseFleet(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		overrides map[string]string
		hosts     []fleet.Host
		pairs     int
		rounds    int
		err       string
	}{
		{name: "names ports and IPv6", doc: "hosts: [node1, 'node2:18521', '[fd00::3]:18522', fd00::4, 10.0.0.5]\n",
			hosts: []fleet.Host{
				{Name: "node1", Addr: "node1:18520"}, {Name: "node2:18521", Addr: "node2:18521"},
				{Name: "[fd00::3]:18522", Addr: "[fd00::3]:18522"}, {Name: "fd00::4", Addr: "[fd00::4]:18520"},
				{Name: "10.0.0.5", Addr: "10.0.0.5:18520"},
			}, pairs: 10, rounds: 5},
		{name: "mappings and devices", doc: "hosts:\n  - {name: a, addr: 10.0.0.1}\n  - {name: b, devices: [mlx5_1]}\ndevices: mlx5_0\n",
			hosts: []fleet.Host{{Name: "a", Addr: "10.0.0.1:18520", Devices: []string{"mlx5_0"}}, {Name: "b", Addr: "b:18520", Devices: []string{"mlx5_1"}}},
			pairs: 1, rounds: 1},
		{name: "comma list from a variable", doc: "vars: {h: a}\nhosts: ${h}\n", overrides: map[string]string{"h": "x, y,z"},
			hosts: []fleet.Host{{Name: "x", Addr: "x:18520"}, {Name: "y", Addr: "y:18520"}, {Name: "z", Addr: "z:18520"}},
			pairs: 3, rounds: 3},
		{name: "ring of two is one pair", doc: "hosts: [a, b]\npattern: ring\n",
			hosts: []fleet.Host{{Name: "a", Addr: "a:18520"}, {Name: "b", Addr: "b:18520"}}, pairs: 1, rounds: 1},
		{name: "parallel caps a round", doc: "hosts: [a, b, c, d, e, f]\nparallel: 1\n",
			hosts: hostsNamed("a", "b", "c", "d", "e", "f"), pairs: 15, rounds: 15},
		{name: "both directions", doc: "hosts: [a, b, c, d]\nboth_directions: true\n",
			hosts: hostsNamed("a", "b", "c", "d"), pairs: 12, rounds: 6},
		{name: "pairs", doc: "hosts: [a, b, c]\npattern: pairs\npairs: [[a, b], [b, a], [c, a]]\n",
			hosts: hostsNamed("a", "b", "c"), pairs: 3, rounds: 3},

		{name: "empty list", doc: "hosts: []\n", err: "f.yaml:1:8: hosts: empty list; " + allowedHosts},
		{name: "nothing", doc: "hosts:\npattern: ring\n", err: "f.yaml:1:7: hosts: want a single value, not nothing; " + allowedHosts},
		{name: "bad port", doc: "hosts: [a, 'b:99999']\n", err: `f.yaml:1:12: hosts: "b:99999": port "99999" is not a number from 1 to 65535`},
		{name: "bad name", doc: "hosts: [a, b/c]\n", err: `f.yaml:1:12: hosts: host name "b/c" has '/'; a name holds letters, digits, '-', '_' and '.'`},
		{name: "same line duplicate", doc: "hosts: [a, b, a]\n", err: "f.yaml:1:15: hosts: host a is listed twice (first at line 1, column 9); list each host once"},
		{name: "mapping without name", doc: "hosts: [a, {addr: 10.0.0.2}]\n", err: "f.yaml:1:12: name: missing; a host needs a name, as outputs show it: {name: node3, addr: 10.0.0.3:18520}"},
		{name: "mapping unknown key", doc: "hosts: [a, {name: b, adr: 10.0.0.2}]\n", err: `f.yaml:1:22: unknown key "adr"; did you mean "addr"?`},
		{name: "name with a space", doc: "hosts: [a, {name: b c, addr: 10.0.0.2}]\n", err: `f.yaml:1:19: name: "b c" holds a space; name a host in one word, as it appears in pairs: and the outputs`},
		{name: "bad addr", doc: "hosts: [a, {name: b, addr: '10.0.0.2:x'}]\n", err: `f.yaml:1:28: addr: "10.0.0.2:x": port "x" is not a number from 1 to 65535`},
		{name: "list in a list", doc: "hosts: [a, [b]]\n", err: "f.yaml:1:12: hosts: want a host, not a list; write HOST, HOST:PORT, or {name: node3, addr: 10.0.0.3:18520, devices: [mlx5_0]}"},
		{name: "device twice", doc: "hosts: [a, b]\ndevices: [mlx5_0, mlx5_0]\n", err: "f.yaml:2:19: devices: device mlx5_0 is listed twice (first at line 2); list each device once"},
		{name: "host device twice", doc: "hosts: [a, {name: b, devices: [x, x]}]\n", err: "f.yaml:1:35: devices: device x is listed twice (first at line 1); list each device once"},
		{name: "two sources", doc: "hosts: {file: h, dns: x}\n", err: "f.yaml:1:18: hosts: file: and dns: both name the hosts; keep one"},
		{name: "no source", doc: "hosts: {port: 1}\n", err: "f.yaml:1:8: hosts: names no hosts; " + allowedHosts},
		{name: "port with file", doc: "hosts: {file: h, port: 1}\n", err: "f.yaml:1:18: port: applies to dns: only; a hostfile gives each host's port as HOST:PORT"},
		{name: "port with SRV", doc: "hosts: {dns: _rdmarun._tcp.example, port: 1}\n", err: "f.yaml:1:37: port: an SRV name (_rdmarun._tcp.example) carries each host's port in its records; remove port:"},
		{name: "DNS name with port", doc: "hosts: {dns: 'peers:18520'}\n", err: `f.yaml:1:14: dns: "peers:18520" is not a DNS name; write HOST for its A/AAAA records, or _service._proto.domain for SRV (the port goes in port:)`},
		{name: "DNS port range", doc: "hosts: {dns: peers, port: 0}\n", err: "f.yaml:1:27: port: 0 is out of range; write the TCP port of the hosts' rdmarun serve, from 1 to 65535 (default 18520)"},
		{name: "empty slurm", doc: "hosts: {slurm: ''}\n", err: `f.yaml:1:16: slurm: empty; write a Slurm node list such as "node[1-4]", or hosts: slurm for the job's own`},
		{name: "pairs without pattern", doc: "hosts: [a, b]\npairs: [[a, b]]\n", err: "f.yaml:2:1: pairs: applies to pattern: pairs only; add pattern: pairs"},
		{name: "pairs with ring", doc: "hosts: [a, b]\npattern: ring\npairs: [[a, b]]\n", err: "f.yaml:3:1: pairs: applies to pattern: pairs only, not ring; write pattern: pairs, or remove pairs:"},
		{name: "pattern pairs without pairs", doc: "hosts: [a, b]\npattern: pairs\n", err: "f.yaml:2:10: pattern: pairs needs pairs:; " + allowedPairs},
		{name: "pair of three", doc: "hosts: [a, b]\npattern: pairs\npairs: [[a, b, c]]\n", err: "f.yaml:3:9: pairs: want a pair [initiator, responder], not a list of 3; " + allowedPairs},
		{name: "both directions on a ring", doc: "hosts: [a, b, c]\npattern: ring\nboth_directions: true\n", err: "f.yaml:3:1: both_directions: applies to all-pairs and rail only; ring fixes each pair's direction"},
		{name: "lag factor not a number", doc: "hosts: [a, b]\nlag_factor: much\n", err: `f.yaml:2:13: lag_factor: "much" is not a number; ` + allowedLag},
		{name: "confirm negative", doc: "hosts: [a, b]\nconfirm: -1\n", err: "f.yaml:2:10: confirm: -1 is out of range; " + allowedConfirm},
		{name: "one host all-pairs", doc: "hosts: [a]\n", err: "f.yaml:1:8: hosts: pattern all-pairs needs at least 2 hosts, got 1; add hosts or test one host's devices with a single-pair scenario"},
		{name: "devices without hosts", doc: "devices: [x]\n", err: "f.yaml:1:1: devices: applies to a fleet scenario only; add hosts: to run on a fleet, or remove devices:"},
		{name: "token with hosts", doc: "token_file: /t\ntls: {ca: ca.pem}\nhosts: [a, b]\n", hosts: hostsNamed("a", "b"), pairs: 1, rounds: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse("f.yaml", []byte(tc.doc+fleetCase), tc.overrides)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got error\n%v\nwant\n%s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f := sc.Fleet
			if f == nil {
				t.Fatal("no fleet")
			}
			if !hostsEqual(f.Hosts, tc.hosts) {
				t.Errorf("hosts %+v, want %+v", f.Hosts, tc.hosts)
			}
			if len(f.Pairs) != tc.pairs || len(f.Rounds) != tc.rounds {
				t.Errorf("%d pairs in %d rounds, want %d in %d", len(f.Pairs), len(f.Rounds), tc.pairs, tc.rounds)
			}
			checkRounds(t, f)
			if sc.IsLoopback() || sc.Peer != "" {
				t.Errorf("a fleet has peer %q (loopback %v); want none", sc.Peer, sc.IsLoopback())
			}
		})
	}
}

func hostsNamed(names ...string) []fleet.Host {
	hosts := make([]fleet.Host, len(names))
	for i, n := range names {
		hosts[i] = fleet.Host{Name: n, Addr: n + ":" + ctrl.DefaultPort}
	}
	return hosts
}

func hostsEqual(a, b []fleet.Host) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Addr != b[i].Addr || strings.Join(a[i].Devices, ",") != strings.Join(b[i].Devices, ",") {
			return false
		}
	}
	return true
}

// checkRounds holds a loaded fleet to what FuzzParse holds a parsed one.
func checkRounds(t *testing.T, f *Fleet) {
	t.Helper()
	// Judged as an inline list: Load has planned every source by now.
	planned := *f
	planned.Source.Kind = HostsList
	if err := checkFleetPlan(&Scenario{Fleet: &planned}); err != nil {
		t.Error(err)
	}
}

// fakeResolver answers hosts: {dns: NAME} in tests.
type fakeResolver struct {
	hosts map[string][]string
	srvs  map[string][]*net.SRV
	err   error
	block bool // every lookup waits for its context, as one to a dead server does
	calls int
}

func (f *fakeResolver) LookupHost(ctx context.Context, host string) ([]string, error) {
	f.calls++
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.err != nil {
		return nil, f.err
	}
	if a, ok := f.hosts[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (f *fakeResolver) LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error) {
	f.calls++
	if f.block {
		<-ctx.Done()
		return "", nil, ctx.Err()
	}
	if f.err != nil {
		return "", nil, f.err
	}
	if r, ok := f.srvs[name]; ok {
		return name, r, nil
	}
	return "", nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

// withResolver answers DNS lookups from r for the rest of the test.
func withResolver(t *testing.T, r *fakeResolver) {
	old := dnsResolver
	dnsResolver = r
	t.Cleanup(func() { dnsResolver = old })
}

// writeScenario writes a scenario into a temporary directory, with other
// files beside it, and returns its path.
func writeScenario(t *testing.T, doc string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte(doc+fleetCase), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFleetDNS(t *testing.T) {
	res := &fakeResolver{
		hosts: map[string][]string{
			"peers.example": {"10.0.0.2", "10.0.0.1", "fd00::3"},
			"n1.example":    {"10.0.1.1"}, "n2.example": {"fd00::12"},
			"one.example": {"10.0.0.1"},
		},
		srvs: map[string][]*net.SRV{
			"_rdmarun._tcp.example": {{Target: "n2.example.", Port: 18600}, {Target: "n1.example.", Port: 18520}},
			"_half._tcp.example":    {{Target: "n1.example.", Port: 18520}, {Target: "gone.example.", Port: 18520}},
			"_none._tcp.example":    {{Target: ".", Port: 0}},
		},
	}
	withResolver(t, res)
	for _, tc := range []struct {
		name, doc string
		hosts     []fleet.Host
		pairs     int
		err       string // after the file's name
	}{
		{name: "A and AAAA", doc: "hosts: {dns: peers.example, port: 18600}\n", hosts: []fleet.Host{
			{Name: "10.0.0.1", Addr: "10.0.0.1:18600"}, {Name: "10.0.0.2", Addr: "10.0.0.2:18600"}, {Name: "fd00::3", Addr: "[fd00::3]:18600"},
		}, pairs: 3},
		{name: "default port", doc: "hosts: {dns: peers.example}\npattern: ring\n", hosts: []fleet.Host{
			{Name: "10.0.0.1", Addr: "10.0.0.1:18520"}, {Name: "10.0.0.2", Addr: "10.0.0.2:18520"}, {Name: "fd00::3", Addr: "[fd00::3]:18520"},
		}, pairs: 3},
		{name: "SRV", doc: "hosts:\n  dns: _rdmarun._tcp.example\npattern: pairs\npairs: [[n1.example, 'n2.example:18600']]\n", hosts: []fleet.Host{
			{Name: "n1.example", Addr: "10.0.1.1:18520"}, {Name: "n2.example:18600", Addr: "[fd00::12]:18600"},
		}, pairs: 1},
		{name: "no such name", doc: "hosts: {dns: nothing.example}\n",
			err: ":1:14: hosts: DNS name nothing.example did not resolve: lookup nothing.example: no such host; check the name, or list the hosts"},
		{name: "SRV host missing", doc: "hosts: {dns: _half._tcp.example}\n",
			err: ":1:14: hosts: DNS name _half._tcp.example did not resolve: SRV host gone.example: lookup gone.example: no such host; check the name, or list the hosts"},
		{name: "no hosts", doc: "hosts: {dns: _none._tcp.example}\n",
			err: ":1:14: hosts: DNS name _none._tcp.example names no hosts; check its records, or list the hosts"},
		{name: "one host", doc: "hosts: {dns: one.example}\n",
			err: ":1:8: hosts: the hosts of dns one.example: pattern all-pairs needs at least 2 hosts, got 1; add hosts or test one host's devices with a single-pair scenario"},
		{name: "pair names a missing host", doc: "hosts: {dns: peers.example}\npattern: pairs\npairs: [[10.0.0.1, 10.0.0.9]]\n",
			err: `:3:20: pairs: host "10.0.0.9" is not in the hosts of dns peers.example; did you mean "10.0.0.1" or "10.0.0.2"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := loadFleet(t, tc.doc, tc.err, tc.hosts)
			if sc == nil {
				return
			}
			if len(sc.Fleet.Pairs) != tc.pairs {
				t.Errorf("%d pairs, want %d", len(sc.Fleet.Pairs), tc.pairs)
			}
			checkRounds(t, sc.Fleet)
		})
	}
}

// loadFleet loads doc as a scenario file and checks that it fails with
// wantErr (after the file's name) or, when wantErr is empty, loads the
// hosts want; it returns the scenario only in that second case.
func loadFleet(t *testing.T, doc, wantErr string, want []fleet.Host) *Scenario {
	t.Helper()
	p := writeScenario(t, doc, nil)
	sc, err := Load(p, nil)
	if wantErr != "" {
		if err == nil || err.Error() != p+wantErr {
			t.Fatalf("got error\n%v\nwant\n%s", err, p+wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if !hostsEqual(sc.Fleet.Hosts, want) {
		t.Errorf("hosts %+v, want %+v", sc.Fleet.Hosts, want)
	}
	return sc
}

// A resolver that fails, and one that never answers: both are load
// errors at the name, the second within the lookup's deadline.
func TestLoadFleetDNSFailures(t *testing.T) {
	p := writeScenario(t, "hosts: {dns: peers.example}\n", nil)
	withResolver(t, &fakeResolver{err: errors.New("SERVFAIL")})
	_, err := Load(p, nil)
	if want := p + ":1:14: hosts: DNS name peers.example did not resolve: SERVFAIL; check the name, or list the hosts"; err == nil || err.Error() != want {
		t.Errorf("got error\n%v\nwant\n%s", err, want)
	}

	withResolver(t, &fakeResolver{block: true})
	old := dnsTimeout
	dnsTimeout = 50 * time.Millisecond
	t.Cleanup(func() { dnsTimeout = old })
	start := time.Now()
	_, err = Load(p, nil)
	if want := p + ":1:14: hosts: DNS name peers.example: no answer within 50ms; check the resolver, or list the hosts"; err == nil || err.Error() != want {
		t.Errorf("got error\n%v\nwant\n%s", err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a hanging resolver held Load for %v past a 50ms deadline", d)
	}
}

// Parse neither looks names up nor runs scontrol nor reads a hostfile:
// those fleets have no hosts until Load.
func TestParseFleetOffline(t *testing.T) {
	res := &fakeResolver{err: errors.New("looked up")}
	withResolver(t, res)
	old := slurmHosts
	slurmHosts = func(context.Context, string) ([]string, error) {
		t.Error("Parse expanded a Slurm node list")
		return nil, errors.New("expanded")
	}
	t.Cleanup(func() { slurmHosts = old })
	for _, tc := range []struct {
		doc  string
		want HostSource
	}{
		{"hosts: {dns: peers.example}\n", HostSource{HostsDNS, "peers.example"}},
		{"hosts: {dns: _rdmarun._tcp.example}\n", HostSource{HostsDNS, "_rdmarun._tcp.example"}},
		{"hosts: slurm\n", HostSource{HostsSlurm, ""}},
		{"hosts: {slurm: 'node[1-4]'}\n", HostSource{HostsSlurm, "node[1-4]"}},
		{"hosts: {file: /no/such/hosts}\n", HostSource{HostsFile, "/no/such/hosts"}},
	} {
		sc, err := Parse("f.yaml", []byte(tc.doc+"pattern: pairs\npairs: [[a, b]]\n"+fleetCase), nil)
		if err != nil {
			t.Errorf("%s: %v", tc.doc, err)
			continue
		}
		f := sc.Fleet
		if f.Source != tc.want || f.Hosts != nil || f.Pairs != nil || f.Rounds != nil {
			t.Errorf("%s: source %v, %d hosts, %d pairs, %d rounds; want %v and none yet", tc.doc, f.Source, len(f.Hosts), len(f.Pairs), len(f.Rounds), tc.want)
		}
	}
	if res.calls != 0 {
		t.Errorf("Parse made %d DNS lookups", res.calls)
	}
}

func TestLoadFleetSlurm(t *testing.T) {
	var asked []string
	old := slurmHosts
	slurmHosts = func(_ context.Context, list string) ([]string, error) {
		asked = append(asked, list)
		switch list {
		case "node[1-3]":
			return []string{"node1", "node2", "node3"}, nil
		case "node[1,1]":
			return []string{"node1", "node1"}, nil
		case "odd":
			return []string{"node1", "no de"}, nil
		}
		return nil, errors.New(`expand Slurm node list "` + list + `": scontrol: Invalid hostlist`)
	}
	t.Cleanup(func() { slurmHosts = old })
	for _, tc := range []struct {
		name, doc, env string
		hosts          []fleet.Host
		err            string
	}{
		{name: "node list", doc: "hosts: {slurm: 'node[1-3]'}\n", hosts: hostsNamed("node1", "node2", "node3")},
		{name: "the job's own", doc: "hosts: slurm\n", env: "node[1-3]", hosts: hostsNamed("node1", "node2", "node3")},
		{name: "outside a job", doc: "hosts: slurm\n",
			err: ":1:8: hosts: hosts: slurm takes the job's nodes from SLURM_JOB_NODELIST, which is not set; run inside a Slurm allocation, or write {slurm: NODELIST}"},
		{name: "scontrol refuses", doc: "hosts: {slurm: 'bad['}\n",
			err: `:1:16: hosts: expand Slurm node list "bad[": scontrol: Invalid hostlist`},
		{name: "a node twice", doc: "hosts: {slurm: 'node[1,1]'}\n",
			err: ":1:16: hosts: the hosts of slurm node[1,1]: hosts 1 (node1) and 2 (node1) both dial node1:18520; remove one"},
		{name: "a name that is no host", doc: "hosts: {slurm: odd}\n",
			err: `:1:16: hosts: node 2 of Slurm node list "odd": host name "no de" has ' '; a name holds letters, digits, '-', '_' and '.'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(slurmNodelistEnv, tc.env)
			sc := loadFleet(t, tc.doc, tc.err, tc.hosts)
			if sc == nil {
				return
			}
			checkRounds(t, sc.Fleet)
		})
	}
	if len(asked) == 0 {
		t.Error("no node list was expanded")
	}
}

// TestLoadFleetScontrol expands a node list through a stand-in for
// Slurm's scontrol on PATH, the way Load does in a job.
func TestLoadFleetScontrol(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\n[ \"$1 $2 $3\" = 'show hostnames gpu[1-2],cpu7' ] || { echo \"scontrol: unexpected $*\" >&2; exit 1; }\nprintf 'gpu1\\ngpu2\\ncpu7\\n'\n"
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin:/bin")
	t.Setenv(slurmNodelistEnv, "gpu[1-2],cpu7")
	sc, err := Load(writeScenario(t, "hosts: slurm\npattern: ring\n", nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := hostsNamed("gpu1", "gpu2", "cpu7"); !hostsEqual(sc.Fleet.Hosts, want) {
		t.Errorf("hosts %+v, want %+v", sc.Fleet.Hosts, want)
	}
	if len(sc.Fleet.Pairs) != 3 || len(sc.Fleet.Rounds) != 3 {
		t.Errorf("%d pairs in %d rounds; want a ring of 3 in 3", len(sc.Fleet.Pairs), len(sc.Fleet.Rounds))
	}
}

// A hostfile is read relative to the scenario, devices: fills in the
// hosts that list none, and token and TLS files resolve beside it.
func TestLoadFleetHostfile(t *testing.T) {
	p := writeScenario(t, "hosts: {file: cluster.hosts}\ndevices: [mlx5_0]\ntoken_file: token\ntls: {ca: ca.pem}\n", map[string]string{
		"cluster.hosts": "node1 devices=mlx5_1\nnode2\n[fd00::3]:18521 slots=4\n",
	})
	sc, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.Host{
		{Name: "node1", Addr: "node1:18520", Devices: []string{"mlx5_1"}},
		{Name: "node2", Addr: "node2:18520", Devices: []string{"mlx5_0"}},
		{Name: "[fd00::3]:18521", Addr: "[fd00::3]:18521", Devices: []string{"mlx5_0"}},
	}
	if !hostsEqual(sc.Fleet.Hosts, want) {
		t.Errorf("hosts %+v, want %+v", sc.Fleet.Hosts, want)
	}
	if got := sc.Fleet.Source; got != (HostSource{HostsFile, "cluster.hosts"}) {
		t.Errorf("source %v, want the path as written", got)
	}
	dir := filepath.Dir(p)
	if sc.TokenFile != filepath.Join(dir, "token") || sc.TLS.CAFile != filepath.Join(dir, "ca.pem") {
		t.Errorf("token %q, CA %q: want them beside the scenario", sc.TokenFile, sc.TLS.CAFile)
	}
	if len(sc.Fleet.Pairs) != 3 || len(sc.Fleet.Rounds) != 3 {
		t.Errorf("%d pairs in %d rounds, want 3 in 3", len(sc.Fleet.Pairs), len(sc.Fleet.Rounds))
	}
}

// A fleet too large to plan is refused before its pairs are built.
func TestFleetPairLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("hosts: [")
	for i := range 1500 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("h" + strconv.Itoa(i))
	}
	b.WriteString("]\n")
	start := time.Now()
	_, err := Parse("f.yaml", []byte(b.String()+fleetCase), nil)
	want := "f.yaml:1:8: hosts: pattern all-pairs over 1500 hosts yields 1124250 pairs, more than 1048576; split the fleet, or choose ring or pairs"
	if err == nil || err.Error() != want {
		t.Errorf("got error\n%v\nwant\n%s", err, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusing took %v", d)
	}
}

// checkFleetPlan is what FuzzParse holds every parsed fleet to: an inline
// list is planned completely, every pair in one round, no disjoint round
// booking a NIC twice; any other source waits for Load.
func checkFleetPlan(sc *Scenario) error {
	f := sc.Fleet
	if f == nil {
		return nil
	}
	if sc.IsLoopback() {
		return errors.New("a fleet scenario reads as loopback")
	}
	if f.Source.Kind != HostsList {
		if f.Hosts != nil || f.Pairs != nil || f.Rounds != nil {
			return fmt.Errorf("Parse planned a %s fleet, which only Load can", f.Source.Kind)
		}
		return nil
	}
	if err := fleet.CheckHosts(f.Hosts); err != nil {
		return fmt.Errorf("parsed hosts fail CheckHosts: %v", err)
	}
	if f.AutoDevices && slices.ContainsFunc(f.Hosts, func(h fleet.Host) bool { return len(h.Devices) == 0 }) {
		// The plan waits for the hosts' devices (ResolveDevices).
		if f.Pairs != nil || f.Rounds != nil {
			return errors.New("devices: auto, and the pairs were planned before the hosts' devices were known")
		}
		return nil
	}
	if len(f.Pairs) == 0 || len(f.Rounds) == 0 {
		return fmt.Errorf("%d pairs in %d rounds; a planned fleet has some", len(f.Pairs), len(f.Rounds))
	}
	count := map[fleet.Pair]int{}
	for r, round := range f.Rounds {
		if f.Parallel > 0 && len(round.Pairs) > f.Parallel {
			return fmt.Errorf("round %d has %d pairs, parallel is %d", r, len(round.Pairs), f.Parallel)
		}
		booked := map[fleet.NIC]bool{}
		for _, p := range round.Pairs {
			if p.A.Host < 0 || p.A.Host >= len(f.Hosts) || p.B.Host < 0 || p.B.Host >= len(f.Hosts) || p.A.Host == p.B.Host {
				return fmt.Errorf("round %d: pair %v does not join two of the %d hosts", r, p, len(f.Hosts))
			}
			count[p]++
			if round.Kind == fleet.Disjoint && (booked[p.A] || booked[p.B]) {
				return fmt.Errorf("round %d books a NIC of %v twice", r, p)
			}
			booked[p.A], booked[p.B] = true, true
		}
	}
	for _, p := range f.Pairs {
		if count[p] != 1 {
			return fmt.Errorf("pair %v is in %d rounds, want 1", p, count[p])
		}
	}
	if len(count) != len(f.Pairs) {
		return fmt.Errorf("the rounds hold %d pairs, the fleet %d", len(count), len(f.Pairs))
	}
	return nil
}

// TestLoadFleetGroupBy: labels from a hostfile and an inline list reach
// the hosts, group_by: is kept, and the report records each host's group
// only above report.LargeFleetHosts.
func TestLoadFleetGroupBy(t *testing.T) {
	dir := t.TempDir()
	var hosts strings.Builder
	for i := range 70 {
		fmt.Fprintf(&hosts, "node%02d rack=r%d\n", i+1, i/10+1)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.hosts"), []byte(hosts.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	scenario := "name: big\nhosts: {file: big.hosts}\npattern: ring\ngroup_by: rack\n" + fleetCase
	if err := os.WriteFile(filepath.Join(dir, "big.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := Load(filepath.Join(dir, "big.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	by, groups := sc.Fleet.ReportGrouping()
	if by != "rack" || len(groups) != 70 || groups[0] != "r1" || groups[69] != "r7" {
		t.Errorf("grouping %q, %q; want rack, r1 ... r7 for 70 hosts", by, groups)
	}
	if got := sc.Fleet.Hosts[12].Labels["rack"]; got != "r2" {
		t.Errorf("node13's rack %q, want r2", got)
	}

	small, err := Parse("small.yaml", []byte("name: s\nhosts: [{name: a, labels: {rack: r1, rail: 0}}, {name: b, labels: {rack: r2}}]\ngroup_by: rack\n"+fleetCase), nil)
	if err != nil {
		t.Fatal(err)
	}
	if by, groups := small.Fleet.ReportGrouping(); by != "rack" || groups != nil {
		t.Errorf("2 hosts: grouping %q, %q; want rack and no groups at this size", by, groups)
	}
	if l := small.Fleet.Hosts[0].Labels; len(l) != 2 || l["rail"] != "0" {
		t.Errorf("host a's labels %v, want rack and rail", l)
	}
}
