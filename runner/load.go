package runner

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/rdma"
)

// maxRuns bounds a scenario's expansion: past it a matrix is a typo (a
// size range by 1.01) rather than a plan anyone can wait for.
const maxRuns = 10000

// Load reads and checks a scenario file. overrides replace the values of
// variables declared under vars: (from `--set NAME=VALUE`). Beyond Parse,
// it finds a fleet's hosts (reading a hostfile, looking a DNS name up
// within 10 s, expanding a Slurm node list) and plans their pairs, and
// reads the baseline's report. The error, when there is one, is an
// ErrorList.
func Load(path string, overrides map[string]string) (*Scenario, error) {
	return LoadWith(path, LoadOptions{Vars: overrides})
}

// LoadOptions are what a command line adds to a scenario file.
type LoadOptions struct {
	// Vars replace the values of variables declared under vars:
	// (--set NAME=VALUE).
	Vars map[string]string
	// Baseline, when set, replaces the file's baseline: (--baseline
	// FILE); a relative path is the working directory's.
	Baseline string
}

// LoadWith is Load with what a command line adds to the file.
func LoadWith(path string, o LoadOptions) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	l := newLoader(path)
	l.baselineFlag = o.Baseline
	sc := l.parse(data, o.Vars)
	dir := filepath.Dir(path)
	if l.c.Count() == 0 {
		l.resolveFleet(dir)
		l.readBaseline(sc, dir)
	}
	if err := l.result(); err != nil {
		return nil, err
	}
	rel := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	rel(&sc.TokenFile)
	if sc.TLS != nil {
		rel(&sc.TLS.CAFile)
		rel(&sc.TLS.CertFile)
		rel(&sc.TLS.KeyFile)
	}
	return sc, nil
}

// Parse checks a scenario held in memory; name is what errors call the
// file. It touches neither the network nor other files: a fleet whose
// hosts come from a hostfile, DNS or Slurm gets them from Load, and until
// then has no Hosts, Pairs or Rounds. The error, when there is one, is an
// ErrorList.
func Parse(name string, data []byte, overrides map[string]string) (*Scenario, error) {
	l := newLoader(name)
	sc := l.parse(data, overrides)
	if err := l.result(); err != nil {
		return nil, err
	}
	return sc, nil
}

// result is the problems found, in file order, or nil.
func (l *loader) result() error { return l.c.Err() }

type loader struct {
	file string
	c    yamlerr.Collector
	vars map[string]string
	// spelled, set when the values came from flags (Single), maps a key
	// to the flag that gave it: errors name that, and have no place.
	spelled map[string]string
	fleet   *fleetDraft // nil unless the file gives a fleet key

	// baselineFlag is --baseline, which replaces baseline:.
	baselineFlag string
	// haveBaseline says the scenario gives a baseline (or the flag
	// does), so that conditions may read it; baselineUsers counts them.
	haveBaseline  bool
	baselineUsers int
	// baselineNode is the baseline: key, baselineAt its file's value;
	// both nil when the flag gave it.
	baselineNode, baselineAt *yaml.Node
}

func newLoader(file string) *loader {
	return &loader{file: file, c: yamlerr.Collector{File: file}}
}

// errorf records a problem at n (nil: no place in the file).
func (l *loader) errorf(n *yaml.Node, key, format string, args ...any) {
	if l.spelled != nil {
		key = l.spelled[key] // "" for a key no flag gave, such as the case's own
	}
	l.c.At(n, key, format, args...)
}

func (l *loader) parse(data []byte, overrides map[string]string) *Scenario {
	root := yamlerr.Parse(&l.c, protectVars(data))
	if root == nil {
		if l.c.Count() == 0 {
			l.errorf(nil, "", "the file is empty; a scenario needs at least cases:")
		}
		return nil
	}
	restoreVars(root)
	root = yamlerr.Resolve(root)
	if root.Kind != yaml.MappingNode {
		l.errorf(root, "", "a scenario is a mapping of keys (name, peer, defaults, cases, ...), not %s", yamlerr.Describe(root))
		return nil
	}
	pairs := l.pairs(root, "", topKeys)
	sc := &Scenario{
		Name:     strings.TrimSuffix(filepath.Base(l.file), filepath.Ext(l.file)),
		File:     l.file,
		Device:   "auto",
		Port:     1,
		Repeat:   1,
		GIDIndex: rdma.AutoGIDIndex,
		Peer:     PeerLoopback,
	}
	// Variables first: every other value may use them.
	l.parseVars(root, pairs["vars"], overrides)
	sc.Vars = l.vars
	for _, key := range topKeys {
		p, ok := pairs[key]
		if !ok {
			continue
		}
		l.parseTop(sc, key, p.k, p.v)
	}
	l.applyBaselineFlag(sc)
	l.checkFleet(sc, pairs)
	if sc.TokenFile != "" && sc.IsLoopback() {
		l.errorf(pairs["token_file"].k, "token_file", "applies to a remote peer only; with peer: loopback both ends are in this process")
	}
	if sc.TLS != nil && sc.IsLoopback() {
		l.errorf(pairs["tls"].k, "tls", "applies to a remote peer only; with peer: loopback both ends are in this process")
	}
	var defaults caseDef
	if p, ok := pairs["defaults"]; ok {
		defaults = l.parseCase(p.v, true)
	}
	p, ok := pairs["cases"]
	if !ok {
		l.errorf(root, "cases", "missing; a scenario needs a list of cases, each with name, op and measure")
		return sc
	}
	l.parseCases(sc, p.k, p.v, &defaults)
	l.checkBaseline(sc)
	if p, ok := pairs["repeat"]; ok {
		l.repeatRuns(sc, p.k)
	}
	if p, ok := pairs["repeat_gap"]; ok && sc.RepeatGap > 0 && sc.Repeat <= 1 {
		l.errorf(p.k, "repeat_gap", "is the pause between passes, and this scenario makes one; add repeat: 2 or more, or drop repeat_gap")
	}
	return sc
}

// maxRepeatGap bounds repeat_gap: past it the pause is a typo (10m for
// 10s) rather than a plan.
const maxRepeatGap = time.Hour

// repeatGap reads repeat_gap, a duration from 0 to maxRepeatGap.
func (l *loader) repeatGap(v *yaml.Node, key string) time.Duration {
	const allowed = "write the pause between passes as a duration such as 2s (0: none), at most 1h"
	s, ok := l.scalar(v, key, allowed)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	switch {
	case s == "0":
		return 0
	case err != nil:
		l.errorf(yamlerr.Resolve(v), key, "%q is not a duration; %s", s, allowed)
	case d < 0 || d > maxRepeatGap:
		l.errorf(yamlerr.Resolve(v), key, "%s is out of range; %s", s, allowed)
	default:
		return d
	}
	return 0
}

// repeatRuns makes the expansion sc.Repeat passes, one after another, so
// a case's repeats are interleaved with the other cases' runs: a drift
// over time (a neighbour's job, a warming NIC) spreads over every case
// rather than landing on the last one, and rdmarun compare measures the
// spread between runs instead of assuming it.
func (l *loader) repeatRuns(sc *Scenario, at *yaml.Node) {
	if sc.Repeat <= 1 {
		return
	}
	if len(sc.runs)*sc.Repeat > maxRuns {
		l.errorf(at, "repeat", "%d passes of %d runs are more than %d runs; repeat fewer times, or sweep fewer sizes, QP counts or modes", sc.Repeat, len(sc.runs), maxRuns)
		return
	}
	pass := sc.runs
	sc.runs = make([]Run, 0, len(pass)*sc.Repeat)
	for r := 1; r <= sc.Repeat; r++ {
		for _, run := range pass {
			run.Index, run.Repeat = len(sc.runs), r
			sc.runs = append(sc.runs, run)
		}
	}
}

var topKeys = slices.Concat([]string{"name", "description", "device", "port", "gid_index", "peer", "peer_device", "token_file", "tls"}, fleetKeys, []string{"repeat", "repeat_gap", "baseline", "vars", "defaults", "cases"})

func (l *loader) parseTop(sc *Scenario, key string, k, v *yaml.Node) {
	switch key {
	case "name":
		if s, ok := l.text(v, key, "write the scenario's name"); ok {
			sc.Name = s
		}
	case "description":
		if s, ok := l.scalarAllowEmpty(v, key); ok {
			sc.Description = s
		}
	case "device":
		if s, ok := l.text(v, key, "write auto or a device name such as mlx5_0 or rxe0 (see rdmarun devices)"); ok {
			sc.Device = s
		}
	case "port":
		if n, ok := l.int(v, key, 1, 255, "write a port number from 1 to 255"); ok {
			sc.Port = n
		}
	case "gid_index":
		s, ok := l.scalar(v, key, "write auto or a GID index from rdmarun devices")
		if !ok {
			return
		}
		if s == "auto" {
			sc.GIDIndex = rdma.AutoGIDIndex
			return
		}
		if n, ok := l.intValue(v, key, s, 0, 65535, "write auto or a GID index from rdmarun devices"); ok {
			sc.GIDIndex = n
		}
	case "peer":
		if s, ok := l.text(v, key, "write loopback or HOST[:PORT] of rdmarun serve"); ok {
			if s != PeerLoopback {
				l.checkAddress(v, key, s)
			}
			sc.Peer = s
		}
	case "peer_device":
		if s, ok := l.text(v, key, "write a device name such as rxe1"); ok {
			sc.PeerDevice = s
		}
	case "token_file":
		if s, ok := l.text(v, key, "write the path of a file holding the shared token"); ok {
			sc.TokenFile = s
		}
	case "tls":
		sc.TLS = l.parseTLS(v)
	case "repeat":
		if n, ok := l.int(v, key, 1, maxRuns, fmt.Sprintf("write how many times to run every case, 1 to %d", maxRuns)); ok {
			sc.Repeat = n
		}
	case "repeat_gap":
		sc.RepeatGap = l.repeatGap(v, key)
	case "baseline":
		sc.Baseline = l.parseBaseline(k, v)
	default:
		if slices.Contains(fleetKeys, key) {
			l.parseFleetKey(key, k, v)
		}
	}
}

// checkAddress reports whether s, the value of key, is HOST[:PORT] of an
// rdmarun serve, and says what is wrong with it if not.
func (l *loader) checkAddress(v *yaml.Node, key, s string) bool {
	allowed := "write HOST[:PORT] of rdmarun serve, such as 10.0.0.2:18520"
	if key == "peer" {
		allowed = "write loopback or HOST[:PORT] of rdmarun serve, such as 10.0.0.2:18520"
	}
	if strings.ContainsAny(s, " \t/") {
		l.errorf(v, key, "%q is not an address; %s", s, allowed)
		return false
	}
	if !strings.Contains(s, ":") || net.ParseIP(s) != nil {
		return true // a host name or an IP address, on the default port
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		l.errorf(v, key, "%q is not an address; %s", s, allowed)
		return false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		l.errorf(v, key, "port %q of %q is not a port number; %s", port, s, allowed)
		return false
	}
	return true
}

func (l *loader) parseTLS(v *yaml.Node) *ctrl.TLSConfig {
	pairs := l.pairs(v, "tls", []string{"ca", "cert", "key", "server_name"})
	if pairs == nil {
		return nil
	}
	t := &ctrl.TLSConfig{}
	for key, p := range pairs {
		allowed := "write a file path"
		if key == "server_name" {
			allowed = "write the name the responder's certificate holds"
		}
		s, ok := l.text(p.v, key, allowed)
		if !ok {
			continue
		}
		switch key {
		case "ca":
			t.CAFile = s
		case "cert":
			t.CertFile = s
		case "key":
			t.KeyFile = s
		case "server_name":
			t.ServerName = s
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		l.errorf(v, "tls", "cert and key go together; give both, or neither")
	}
	return t
}
