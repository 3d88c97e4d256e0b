package doctor

import "encoding/json"

// Status is a check's outcome. The order of the constants is their
// severity: a report's worst status decides the exit code.
type Status int

// The outcomes, least severe first.
const (
	OK Status = iota
	// NotApplicable: the check does not apply here (a PCIe check on a
	// software device, an MTU check of a netdev on InfiniBand).
	NotApplicable
	// CannotTell: the check applies, but what it needs is not readable
	// as a file (PFC needs the DCB netlink interface, MaxReadReq the PCI
	// configuration space).
	CannotTell
	// Warn: likely to cost something, but a test can still be valid.
	Warn
	// Fail: a test on this host will be wrong, slow or will not start.
	Fail
)

var statusNames = []string{"ok", "not_applicable", "cannot_tell", "warn", "fail"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// MarshalText implements encoding.TextMarshaler.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Check is one finding.
type Check struct {
	// Name is a stable identifier, "layer.what": alerts, scripts and
	// tests key on it, so it never changes once released.
	Name string `json:"check"`
	// Device and Port are empty (0) for checks of the host.
	Device   string `json:"device,omitempty"`
	Port     int    `json:"port,omitempty"`
	Status   Status `json:"status"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
	// Cost is what the finding likely costs a test, in its units where
	// they can be computed: "at most 63 Gb/s of the port's 100 Gb/s".
	Cost string `json:"cost,omitempty"`
	Fix  string `json:"fix,omitempty"`
}

// Schema names the JSON layout of a Report; it changes when a field's
// meaning does.
const Schema = "rdmarun.doctor/v1"

// Report is every check of one run, in a stable order: the host's first,
// then each device's and each port's.
type Report struct {
	// Devices are the RDMA devices found; none is the caller's exit 4.
	Devices []string `json:"devices"`
	Checks  []Check  `json:"checks"`
}

// Failed reports whether any check failed.
func (r Report) Failed() bool { return r.Worst() == Fail }

// Worst is the most severe status of any check; OK for no checks.
func (r Report) Worst() Status {
	w := OK
	for _, c := range r.Checks {
		w = max(w, c.Status)
	}
	return w
}

// Count is how many checks have each status, by name.
func (r Report) Count() map[string]int {
	n := map[string]int{}
	for _, s := range statusNames {
		n[s] = 0
	}
	for _, c := range r.Checks {
		n[c.Status.String()]++
	}
	return n
}

// MarshalJSON adds the schema and the counts, so a consumer needs no
// pass over the checks to decide.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		Schema string `json:"schema"`
		plain
		Summary map[string]int `json:"summary"`
	}{Schema, plain(r), r.Count()})
}
