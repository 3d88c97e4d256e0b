package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files from the current output")

func TestParseHostfileValid(t *testing.T) {
	path := filepath.Join("testdata", "hostfiles", "valid.hosts")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hosts, err := ParseHostfile(f, "valid.hosts")
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(hosts, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "hostfiles", "valid.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("ParseHostfile(%s) =\n%s\nwant (%s)\n%s", path, got, golden, want)
	}
	if err := CheckHosts(hosts); err != nil {
		t.Errorf("CheckHosts on a parsed hostfile: %v", err)
	}
}

// Each invalid-*.hosts file starts with "# want: ERROR".
func TestParseHostfileInvalid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "hostfiles", "invalid-*.hosts"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid hostfiles (%v)", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("%s does not start with '# want: ERROR'", path)
			}
			hosts, err := ParseHostfile(bytes.NewReader(data), filepath.Base(path))
			if err == nil {
				t.Fatalf("no error; got %v", hosts)
			}
			if err.Error() != want {
				t.Errorf("error:\n got %s\nwant %s", err, want)
			}
		})
	}
}

func TestDialAddr(t *testing.T) {
	for _, tc := range []struct {
		host Host
		want string
	}{
		{Host{Name: "a"}, "a:18520"},
		{Host{Name: "a", Addr: "b"}, "b:18520"},
		{Host{Name: "a", Addr: "b:1"}, "b:1"},
		{Host{Name: "v6", Addr: "fd00::1"}, "[fd00::1]:18520"},
		{Host{Name: "v6", Addr: "[fd00::1]"}, "[fd00::1]:18520"},
		{Host{Name: "v6", Addr: "[fd00::1]:7"}, "[fd00::1]:7"},
	} {
		if got := tc.host.DialAddr(); got != tc.want {
			t.Errorf("%+v.DialAddr() = %s, want %s", tc.host, got, tc.want)
		}
	}
}

func TestCheckHosts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hosts []Host
		want  string // "" means valid
	}{
		{"valid", []Host{{Name: "a"}, {Name: "b", Addr: "b:2"}, {Name: "c", Devices: []string{"x", "y"}}}, ""},
		{"none", nil, "no hosts; list at least one"},
		{"empty name", []Host{{Name: "a"}, {Name: " ", Addr: "b"}}, "host 2 has an empty name; give every host a name"},
		{"same address after default port", []Host{{Name: "a"}, {Name: "b", Addr: "a:18520"}},
			"hosts 1 (a) and 2 (b) both dial a:18520; remove one"},
		{"same address, case", []Host{{Name: "a", Addr: "Node"}, {Name: "b", Addr: "node"}},
			"hosts 1 (a) and 2 (b) both dial node:18520; remove one"},
		{"same name", []Host{{Name: "a", Addr: "x"}, {Name: "a", Addr: "y"}}, "hosts 1 and 2 are both named a; names must be unique"},
		{"same device", []Host{{Name: "a", Devices: []string{"x", "x"}}}, "host a lists device x twice; list each device once"},
		{"empty device", []Host{{Name: "a", Devices: []string{""}}}, "host a has an empty device name; remove it or name the device"},
		{"labels", []Host{{Name: "a", Labels: map[string]string{"rack": "r1", "rail": "0"}}}, ""},
		{"bad label", []Host{{Name: "a", Labels: map[string]string{"rack": "r 1", "a-b": ""}}}, "host a: label a-b= has no value; write a-b=VALUE, or leave it out"},
		{"reserved label", []Host{{Name: "a", Labels: map[string]string{"devices": "x"}}}, "host a: devices is a hostfile key, not a label; name the label otherwise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckHosts(tc.hosts)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("error %v, want %s", err, tc.want)
			}
		})
	}
}

// FuzzParseHostfile: never panic; what parses passes CheckHosts, dials a
// valid host:port, and reads back the same when written out again.
func FuzzParseHostfile(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "hostfiles", "*.hosts"))
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a\nb:1 devices=x\n[::1]:2\n::2\n"))
	f.Add([]byte("a rack=r1 rail=0\nb:1 devices=x rack=r1 sw=l/2\nc Devices=y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		hosts, err := ParseHostfile(bytes.NewReader(data), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := CheckHosts(hosts); err != nil {
			t.Fatalf("parsed hosts fail CheckHosts: %v", err)
		}
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		for _, h := range hosts {
			if _, _, err := net.SplitHostPort(h.DialAddr()); err != nil {
				t.Fatalf("host %+v dials %q: %v", h, h.DialAddr(), err)
			}
			w.WriteString(h.Name)
			if len(h.Devices) > 0 {
				w.WriteString(" devices=" + strings.Join(h.Devices, ","))
			}
			for _, k := range slices.Sorted(maps.Keys(h.Labels)) {
				w.WriteString(" " + k + "=" + h.Labels[k])
			}
			w.WriteString("\n")
		}
		w.Flush()
		again, err := ParseHostfile(&out, "again")
		if err != nil {
			t.Fatalf("written back as\n%s\nit fails: %v", out.String(), err)
		}
		a, _ := json.Marshal(hosts)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip differs:\n%s\n%s", a, b)
		}
	})
}

func TestParseHost(t *testing.T) {
	for _, tc := range []struct {
		spec, name, addr, err string
	}{
		{spec: "node1", name: "node1", addr: "node1:18520"},
		{spec: "node2:18521", name: "node2:18521", addr: "node2:18521"},
		{spec: "[fd00::3]:18522", name: "[fd00::3]:18522", addr: "[fd00::3]:18522"},
		{spec: "[fd00::3]", name: "fd00::3", addr: "[fd00::3]:18520"},
		{spec: "fd00::4", name: "fd00::4", addr: "[fd00::4]:18520"},
		{spec: "node1:0", err: `"node1:0": port "0" is not a number from 1 to 65535`},
		{spec: "a b", err: `host name "a b" has ' '; a name holds letters, digits, '-', '_' and '.'`},
		{spec: "", err: "empty host name; write HOST or HOST:PORT"},
	} {
		h, err := ParseHost(tc.spec)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseHost(%q): error %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || h.Name != tc.name || h.Addr != tc.addr {
			t.Errorf("ParseHost(%q) = %+v, %v; want name %q, addr %q", tc.spec, h, err, tc.name, tc.addr)
		}
	}
}
