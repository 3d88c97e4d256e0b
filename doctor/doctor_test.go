package doctor

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rdmarun/rdmarun/internal/golden"
	"github.com/rdmarun/rdmarun/rdma"
)

// fixtures are the saved hosts under testdata/, each with the names of
// the checks it must fail: no more, no fewer.
var fixtures = []struct {
	host   string
	failed []string
}{
	{"mlx5-roce", nil},
	{"bnxt-roce", nil},
	{"mlx5-ib", nil},
	{"rxe", nil},
	{"siw", nil},
	// mlx5-roce with its IPv4 address on VLAN 100 only, whose interface
	// has an MTU of 1500 under the parent's 9000.
	{"mlx5-vlan", []string{"mtu.netdev"}},
	// PCIe x8 of x16, MTU 1500 on the netdev under an active MTU of 4096,
	// governor powersave, memlock 64 KiB.
	{"broken", []string{"cpu.governor", "limits.memlock", "mtu.netdev", "pcie.width"}},
}

func runFixture(t *testing.T, host string) Report {
	t.Helper()
	env, err := EnvAt(filepath.Join("testdata", host))
	if err != nil {
		t.Fatal(err)
	}
	return Run(env)
}

func TestFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.host, func(t *testing.T) {
			r := runFixture(t, f.host)
			var failed []string
			for _, c := range r.Checks {
				if c.Status == Fail {
					failed = append(failed, c.Name)
				}
			}
			slices.Sort(failed)
			if !slices.Equal(failed, f.failed) {
				t.Errorf("failed checks %q, want %q", failed, f.failed)
			}
			if r.Failed() != (len(f.failed) > 0) {
				t.Errorf("Failed() = %v with failed checks %q", r.Failed(), failed)
			}
			if len(r.Devices) != 1 {
				t.Errorf("devices %q, want the fixture's one", r.Devices)
			}
			var text, js bytes.Buffer
			if err := WriteText(&text, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, f.host+".golden.txt", text.Bytes())
			golden.Check(t, f.host+".golden.json", js.Bytes())
		})
	}
}

// TestIWARPNotJudgedAsRoCE: an iWARP port is Ethernet too, but its
// traffic is TCP's, addressed by IP: the RoCE checks (GID, PFC, ECN,
// the netdev's MTU against RoCE headers) do not apply to it, where a
// healthy siw0 once read as a warning and four cannot_tells, and the
// transport line says what iWARP implies.
func TestIWARPNotJudgedAsRoCE(t *testing.T) {
	r := runFixture(t, "siw")
	for _, name := range []string{"gid.roce_v2_ipv4", "roce.ecn", "roce.pfc", "roce.trust", "roce.pause", "mtu.netdev"} {
		if c := statusOf(t, r, name); c.Status != NotApplicable || !strings.HasPrefix(c.Found, "iWARP") {
			t.Errorf("%s on siw0: %s %q, want not_applicable naming iWARP", name, c.Status, c.Found)
		}
	}
	if c := statusOf(t, r, "device.transport"); c.Status != OK || !strings.Contains(c.Found, "connected only through the CM") {
		t.Errorf("device.transport on siw0: %s %q, want ok saying the QPs connect through the CM", c.Status, c.Found)
	}
	if c := statusOf(t, r, "device.kind"); c.Found != "siw" {
		t.Errorf("device.kind on siw0 found %q, want the siw driver named", c.Found)
	}
	if c := statusOf(t, runFixture(t, "mlx5-roce"), "device.transport"); c.Status != OK || c.Found != "RoCE" {
		t.Errorf("device.transport on mlx5-roce: %s %q, want ok RoCE", c.Status, c.Found)
	}
}

// TestVLANNetdevs: on a port whose chosen GID sits on a VLAN, the MTU
// checks read the VLAN interface, which the traffic leaves by, and the
// congestion checks the port's own netdev under it, which alone has the
// ECN switches and the pause counters.
func TestVLANNetdevs(t *testing.T) {
	r := runFixture(t, "mlx5-vlan")
	for _, tc := range []struct {
		check  string
		status Status
		names  string // the netdev its finding or fix names
	}{
		{"mtu.netdev", Fail, "ens1f0np0.100 MTU 1500"},
		{"gid.roce_v2_ipv4", OK, ""},
		{"roce.ecn", OK, ""},
		{"roce.pfc", CannotTell, "dev ens1f0np0`"},
		{"roce.trust", CannotTell, "dev ens1f0np0`"},
		{"roce.pause", OK, ""},
	} {
		c := statusOf(t, r, tc.check)
		if c.Status != tc.status || !strings.Contains(c.Found+" "+c.Fix, tc.names) {
			t.Errorf("%s: %s %q (fix %q), want %s naming %q", tc.check, c.Status, c.Found, c.Fix, tc.status, tc.names)
		}
	}
	ms := MTUs(Env{Sys: filepath.Join("testdata", "mlx5-vlan", "sys")})
	if len(ms) != 1 || ms[0].Netdev != "ens1f0np0.100" || ms[0].NetdevMTU != 1500 {
		t.Errorf("MTUs for the far end: %+v, want the VLAN interface's 1500", ms)
	}
}

func statusOf(t *testing.T, r Report, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %s in %v", name, r.Checks)
	return Check{}
}

// TestNUMA: the CPUs given are judged against the device's local CPUs;
// without them the check says where tests should pin.
func TestNUMA(t *testing.T) {
	env, err := EnvAt(filepath.Join("testdata", "mlx5-ib"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cpus []int
		want Status
	}{{nil, NotApplicable}, {[]int{2, 3}, OK}, {[]int{1, 2}, Fail}} {
		env.CPUs = tc.cpus
		c := statusOf(t, Run(env), "numa.node")
		if c.Status != tc.want {
			t.Errorf("CPUs %v: %s (%s), want %s", tc.cpus, c.Status, c.Found, tc.want)
		}
	}
}

// TestFilter: --device and --port select what is checked; the host's
// checks always run.
func TestFilter(t *testing.T) {
	env, err := EnvAt(filepath.Join("testdata", "broken"))
	if err != nil {
		t.Fatal(err)
	}
	env.Device = "mlx5_9"
	r := Run(env)
	if len(r.Devices) != 0 || len(r.Checks) != 4 {
		t.Errorf("device mlx5_9: devices %q and %d checks, want none and the host's 4", r.Devices, len(r.Checks))
	}
	env.Device, env.Port = "mlx5_0", 1
	if r := Run(env); len(r.Devices) != 1 || statusOf(t, r, "mtu.netdev").Port != 1 {
		t.Errorf("port 1: %+v", r)
	}
}

// TestMissingRoots: a host whose files are all missing gives cannot_tell
// or not_applicable, never a failure the host does not have.
func TestMissingRoots(t *testing.T) {
	dir := t.TempDir()
	r := Run(Env{Sys: filepath.Join(dir, "sys"), Proc: filepath.Join(dir, "proc"), Dev: filepath.Join(dir, "dev")})
	if r.Worst() > CannotTell || len(r.Devices) != 0 {
		t.Errorf("worst %s, devices %q: %+v", r.Worst(), r.Devices, r.Checks)
	}
}

// TestMTUWithoutVerbs: without the verbs view the netdev's MTU is judged
// by what it carries, and the active MTU cannot be told.
func TestMTUWithoutVerbs(t *testing.T) {
	env, err := EnvAt(filepath.Join("testdata", "broken"))
	if err != nil {
		t.Fatal(err)
	}
	env.PortMTU = nil
	r := Run(env)
	if c := statusOf(t, r, "mtu.netdev"); c.Status != Warn || c.Found != "ens1f0np0 MTU 1500: RDMA packets of at most 1024 B" {
		t.Errorf("mtu.netdev = %s %q", c.Status, c.Found)
	}
	if c := statusOf(t, r, "mtu.active"); c.Status != CannotTell {
		t.Errorf("mtu.active = %s", c.Status)
	}
}

func TestStatusOrder(t *testing.T) {
	order := []Status{OK, NotApplicable, CannotTell, Warn, Fail}
	for i, s := range order {
		if int(s) != i || s.String() == "unknown" {
			t.Errorf("status %d is %q", i, s)
		}
	}
	if Status(99).String() != "unknown" {
		t.Error("an out-of-range status has a name")
	}
}

// TestJSONMatchesSchema: every fixture's JSON is valid under schema.json,
// which documents the layout for consumers.
func TestJSONMatchesSchema(t *testing.T) {
	f, err := os.Open("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range append(fixtures, struct {
		host   string
		failed []string
	}{"none", nil}) {
		var b bytes.Buffer
		if err := WriteJSON(&b, runFixture(t, fx.host)); err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(&b)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: %v", fx.host, err)
		}
	}
	// The schema rejects what it should: an unknown status.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"schema":"rdmarun.doctor/v1","devices":[],"summary":{"ok":0,"not_applicable":0,"cannot_tell":0,"warn":0,"fail":0},"checks":[{"check":"a.b","status":"bad","expected":"","found":""}]}`))
	if s.Validate(bad) == nil {
		t.Error("schema accepts status \"bad\"")
	}
}

// TestUnreadableCounter: a counter the driver answers with garbage is
// cannot_tell, not a healthy 0 nor a missing counter.
func TestUnreadableCounter(t *testing.T) {
	dir := t.TempDir()
	port := filepath.Join(dir, "sys", "class", "infiniband", "mlx5_0", "ports", "1")
	for file, content := range map[string]string{
		"state": "4: ACTIVE\n", "phys_state": "5: LinkUp\n", "link_layer": "InfiniBand\n", "rate": "200 Gb/sec (4X HDR)\n",
		"counters/link_downed": "garbage\n", "counters/symbol_error": "0\n",
	} {
		p := filepath.Join(port, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Run(Env{Sys: filepath.Join(dir, "sys"), Proc: filepath.Join(dir, "proc"), Dev: filepath.Join(dir, "dev")})
	if c := statusOf(t, r, "port.link_downed"); c.Status != CannotTell || !strings.Contains(c.Found, "counters/link_downed") {
		t.Errorf("port.link_downed = %s %q", c.Status, c.Found)
	}
	if c := statusOf(t, r, "port.error_counters"); c.Status != OK {
		t.Errorf("port.error_counters = %s %q", c.Status, c.Found)
	}
}

// TestUnreadableGIDs: a port whose GID table cannot be read is reported
// on that check; the device is still checked.
func TestUnreadableGIDs(t *testing.T) {
	dir := t.TempDir()
	port := filepath.Join(dir, "sys", "class", "infiniband", "mlx5_0", "ports", "1")
	if err := os.MkdirAll(port, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string]string{"state": "4: ACTIVE\n", "phys_state": "5: LinkUp\n", "link_layer": "Ethernet\n", "rate": "100 Gb/sec (2X HDR)\n"} {
		if err := os.WriteFile(filepath.Join(port, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Run(Env{Sys: filepath.Join(dir, "sys"), Proc: filepath.Join(dir, "proc"), Dev: filepath.Join(dir, "dev")})
	if c := statusOf(t, r, "gid.roce_v2_ipv4"); c.Status != CannotTell || c.Found != "gids: no such file or directory" {
		t.Errorf("gid.roce_v2_ipv4 = %s %q", c.Status, c.Found)
	}
	if c := statusOf(t, r, "port.state"); c.Status != OK || len(r.Devices) != 1 {
		t.Errorf("port.state = %s, devices %q", c.Status, r.Devices)
	}
}

// TestGIDsFromVerbs: with the verbs listing at hand the GID table comes
// from it, and sysfs's table, which costs seconds on rxe under
// emulation, is not read at all (here it does not exist). A device
// verbs did not list still gets sysfs's.
func TestGIDsFromVerbs(t *testing.T) {
	dir := t.TempDir()
	for _, dev := range []string{"mlx5_0", "mlx5_1"} {
		port := filepath.Join(dir, "sys", "class", "infiniband", dev, "ports", "1")
		if err := os.MkdirAll(port, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, content := range map[string]string{"state": "4: ACTIVE\n", "phys_state": "5: LinkUp\n", "link_layer": "Ethernet\n", "rate": "100 Gb/sec (2X HDR)\n"} {
			if err := os.WriteFile(filepath.Join(port, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	gid := rdma.GID{Index: 3, GID: rdma.GIDAddr(net.ParseIP("10.0.0.2").To16()), Type: rdma.GIDTypeRoCEv2, Netdev: "ens1f0np0"}
	verbs := []rdma.Device{{Name: "mlx5_0", Ports: []rdma.Port{{Num: 1, LinkLayer: "Ethernet", GIDs: []rdma.GID{gid}}}}}
	r := Run(Env{Sys: filepath.Join(dir, "sys"), Proc: filepath.Join(dir, "proc"), Dev: filepath.Join(dir, "dev"), Verbs: verbs})
	var listed, unlisted *Check
	for i, c := range r.Checks {
		if c.Name == "gid.roce_v2_ipv4" {
			switch c.Device {
			case "mlx5_0":
				listed = &r.Checks[i]
			case "mlx5_1":
				unlisted = &r.Checks[i]
			}
		}
	}
	if listed == nil || listed.Status != OK || !strings.Contains(listed.Found, "index 3") {
		t.Errorf("mlx5_0 gid.roce_v2_ipv4 = %+v, want OK from the verbs listing (index 3)", listed)
	}
	if unlisted == nil || unlisted.Status != CannotTell || !strings.Contains(unlisted.Found, "gids:") {
		t.Errorf("mlx5_1 gid.roce_v2_ipv4 = %+v, want sysfs's unreadable table", unlisted)
	}
}
