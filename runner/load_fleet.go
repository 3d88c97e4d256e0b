package runner

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/dnstargets"
	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

// fleetKeys are the top-level keys that shape a fleet run; every one but
// hosts: needs hosts:.
var fleetKeys = []string{"hosts", "devices", "pattern", "both_directions", "pairs", "parallel", "confirm", "lag_factor", "group_by"}

const (
	allowedHosts   = "write a list such as [node1, node2:18521, {name: node3, addr: 10.0.0.3, devices: [mlx5_0]}], {file: PATH}, {dns: NAME, port: N}, {slurm: NODELIST} or slurm"
	allowedDevices = "write a list of RDMA device names such as [mlx5_0, mlx5_1], or auto (fleet-wide: each host's responder lists its ACTIVE devices when the run starts)"
	allowedPairs   = "write a list of [initiator, responder] host names, such as [[node1, node2], [node3, node1]]"
	allowedConfirm = "write how many times to re-run a bad pair before naming suspects, from 0 to 10"
	allowedLag     = "write a factor above 1 (a pair lags when that many times worse than the fleet median), such as 2"
	maxConfirm     = 10
	maxParallel    = 1 << 20
	maxLagFactor   = 1000
)

var allowedParallel = fmt.Sprintf("write the most pairs to run at once, or 0 for the default (%d)", DefaultParallel)

// autoDevices is devices: auto (see Fleet.AutoDevices).
const autoDevices = "auto"

// fleetDraft is what the fleet keys said, with the nodes that said it, so
// that a problem found only once the hosts are known (at Load, for hosts
// read from a file, DNS or Slurm) still points at the line concerned.
type fleetDraft struct {
	f     *Fleet
	keys  map[string]*yaml.Node // each fleet key given, by name
	hosts *yaml.Node            // the value of hosts:
	// source is the node naming the hostfile, DNS name or node list.
	source  *yaml.Node
	dnsPort int
	// list and listNodes are an inline host list and each host's entry.
	list      []fleet.Host
	listNodes []*yaml.Node
	byName    map[string]int // index in list, to refuse a repeat
	byAddr    map[string]int // by dial address, lower case
	devices   []string
	pattern   *yaml.Node // nil: all-pairs by default, or a pattern: that was wrong
	pairs     [][2]*yaml.Node
	parallel  *yaml.Node
	groupBy   *yaml.Node // the value of group_by:
	// bad is set when a fleet key was wrong: the error is reported, and
	// the pattern is not expanded, which would only add echoes of it.
	bad bool
}

// parseFleetKey reads one of fleetKeys into the draft; checkFleet then
// decides whether the scenario is a fleet.
func (l *loader) parseFleetKey(key string, k, v *yaml.Node) {
	if l.fleet == nil {
		l.fleet = &fleetDraft{f: &Fleet{Pattern: fleet.AllPairs}, keys: map[string]*yaml.Node{}}
	}
	d, f := l.fleet, l.fleet.f
	d.keys[key] = k
	before := l.c.Count()
	switch key {
	case "hosts":
		l.parseHosts(d, v)
	case "devices":
		if n := yamlerr.Resolve(v); n.Kind == yaml.ScalarNode && strings.TrimSpace(n.Value) == autoDevices {
			f.AutoDevices = true
			break
		}
		d.devices = l.deviceList(v, "devices")
	case "pattern":
		l.parsePattern(d, v)
	case "both_directions":
		f.Options.BothDirections, _ = l.bool(v, key)
	case "pairs":
		l.parsePairs(d, v)
	case "parallel":
		f.Parallel, _ = l.int(v, key, 0, maxParallel, allowedParallel)
		d.parallel = yamlerr.Resolve(v)
	case "confirm":
		f.Confirm, _ = l.int(v, key, 0, maxConfirm, allowedConfirm)
	case "lag_factor":
		f.LagFactor, _ = l.lagFactor(v)
	case "group_by":
		l.parseGroupBy(d, v)
	}
	if l.c.Count() > before {
		d.bad = true
	}
}

func (l *loader) parseHosts(d *fleetDraft, v *yaml.Node) {
	n := yamlerr.Resolve(v)
	d.hosts = n
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			l.errorf(n, "hosts", "empty list; %s", allowedHosts)
			return
		}
		d.f.Source = HostSource{Kind: HostsList}
		for _, c := range n.Content {
			l.listHost(d, yamlerr.Resolve(c))
		}
	case yaml.MappingNode:
		l.hostSource(d, n)
	case yaml.ScalarNode:
		s, ok := l.text(n, "hosts", allowedHosts)
		if !ok {
			return
		}
		if strings.TrimSpace(s) == "slurm" {
			d.f.Source, d.source = HostSource{Kind: HostsSlurm}, n
			return
		}
		// One value with commas is a list, so that one variable
		// (--set hosts=node1,node2) can name the fleet.
		d.f.Source = HostSource{Kind: HostsList}
		for _, spec := range strings.Split(s, ",") {
			l.addListHost(d, n, strings.TrimSpace(spec))
		}
	default:
		l.errorf(n, "hosts", "want a list or a mapping, not %s; %s", yamlerr.Describe(n), allowedHosts)
	}
}

// listHost reads one entry of an inline list: HOST[:PORT], or
// {name, addr, devices, labels}.
func (l *loader) listHost(d *fleetDraft, n *yaml.Node) {
	switch n.Kind {
	case yaml.ScalarNode:
		if s, ok := l.text(n, "hosts", "write HOST, HOST:PORT or [IPV6]:PORT"); ok {
			l.addListHost(d, n, strings.TrimSpace(s))
		}
		return
	case yaml.MappingNode:
	default:
		l.errorf(n, "hosts", "want a host, not %s; write HOST, HOST:PORT, or {name: node3, addr: 10.0.0.3:18520, devices: [mlx5_0]}", yamlerr.Describe(n))
		return
	}
	pairs := l.pairs(n, "hosts", []string{"name", "addr", "devices", "labels"})
	p, ok := pairs["name"]
	if !ok {
		l.errorf(n, "name", "missing; a host needs a name, as outputs show it: {name: node3, addr: 10.0.0.3:18520}")
		return
	}
	name, ok := l.text(p.v, "name", "write the host's name, as outputs show it")
	if !ok {
		return
	}
	name = strings.TrimSpace(name)
	if strings.ContainsAny(name, " \t") {
		l.errorf(yamlerr.Resolve(p.v), "name", "%q holds a space; name a host in one word, as it appears in pairs: and the outputs", name)
		return
	}
	// Without addr:, the name is what is dialled.
	spec, at, key := name, yamlerr.Resolve(p.v), "name"
	if a, ok := pairs["addr"]; ok {
		if spec, ok = l.text(a.v, "addr", "write HOST, HOST:PORT or [IPV6]:PORT of the host's rdmarun serve"); !ok {
			return
		}
		at, key = yamlerr.Resolve(a.v), "addr"
	}
	var devices []string
	if dv, ok := pairs["devices"]; ok {
		if devices = l.deviceList(dv.v, "devices"); devices == nil {
			return
		}
	}
	var labels map[string]string
	if lv, ok := pairs["labels"]; ok {
		if labels, ok = l.hostLabels(lv.v); !ok {
			return
		}
	}
	h, err := fleet.ParseHost(strings.TrimSpace(spec))
	if err != nil {
		l.errorf(at, key, "%v", err)
		return
	}
	l.addHost(d, n, fleet.Host{Name: name, Addr: h.Addr, Devices: devices, Labels: labels})
}

func (l *loader) addListHost(d *fleetDraft, n *yaml.Node, spec string) {
	h, err := fleet.ParseHost(spec)
	if err != nil {
		l.errorf(n, "hosts", "%v", err)
		return
	}
	l.addHost(d, n, h)
}

// addHost appends a host of an inline list, refusing one that repeats an
// earlier host's name or address, at the repeat, naming the first.
func (l *loader) addHost(d *fleetDraft, n *yaml.Node, h fleet.Host) {
	if d.byName == nil {
		d.byName, d.byAddr = map[string]int{}, map[string]int{}
	}
	where := func(i int) string {
		first := d.listNodes[i]
		if first.Line == n.Line {
			return fmt.Sprintf("line %d, column %d", first.Line, first.Column)
		}
		return fmt.Sprintf("line %d", first.Line)
	}
	addr := strings.ToLower(h.DialAddr())
	if i, dup := d.byName[h.Name]; dup {
		l.errorf(n, "hosts", "host %s is listed twice (first at %s); list each host once", h.Name, where(i))
		return
	}
	if i, dup := d.byAddr[addr]; dup {
		l.errorf(n, "hosts", "host %s dials %s, as host %s does (%s); list each host once", h.Name, h.DialAddr(), d.list[i].Name, where(i))
		return
	}
	d.byName[h.Name], d.byAddr[addr] = len(d.list), len(d.list)
	d.list = append(d.list, h)
	d.listNodes = append(d.listNodes, n)
}

// hostSource reads hosts: {file: PATH}, {dns: NAME, port: N} or
// {slurm: NODELIST}.
func (l *loader) hostSource(d *fleetDraft, n *yaml.Node) {
	pairs := l.pairs(n, "hosts", []string{"file", "dns", "port", "slurm"})
	var kind *pair
	var kindName string
	for _, key := range []string{"file", "dns", "slurm"} {
		p, ok := pairs[key]
		if !ok {
			continue
		}
		if kind != nil {
			first, second := kind, p
			if p.k.Line < kind.k.Line || p.k.Line == kind.k.Line && p.k.Column < kind.k.Column {
				first, second = p, kind
			}
			l.errorf(second.k, "hosts", "%s: and %s: both name the hosts; keep one", first.k.Value, second.k.Value)
			return
		}
		kind, kindName = p, key
	}
	if kind == nil {
		if len(pairs) > 0 || len(n.Content) == 0 {
			l.errorf(n, "hosts", "names no hosts; %s", allowedHosts)
		}
		return
	}
	value, ok := l.text(kind.v, kindName, map[string]string{
		"file":  "write the path of a hostfile, one HOST[:PORT] [devices=DEV,DEV] per line",
		"dns":   "write a DNS name: HOST for its A/AAAA records, or _service._proto.domain for SRV",
		"slurm": `write a Slurm node list such as "node[1-4]", or hosts: slurm for the job's own`,
	}[kindName])
	if !ok {
		return
	}
	value = strings.TrimSpace(value)
	d.source = yamlerr.Resolve(kind.v)
	d.f.Source.Value = value
	switch kindName {
	case "file":
		d.f.Source.Kind = HostsFile
	case "slurm":
		d.f.Source.Kind = HostsSlurm
	case "dns":
		d.f.Source.Kind = HostsDNS
		if strings.ContainsAny(value, " \t/:") {
			l.errorf(d.source, "dns", "%q is not a DNS name; write HOST for its A/AAAA records, or _service._proto.domain for SRV (the port goes in port:)", value)
		}
		d.dnsPort, _ = strconv.Atoi(ctrl.DefaultPort)
	}
	p, ok := pairs["port"]
	if !ok {
		return
	}
	switch {
	case kindName != "dns":
		l.errorf(p.k, "port", "applies to dns: only; a %s gives each host's port as HOST:PORT", map[string]string{"file": "hostfile", "slurm": "Slurm node list"}[kindName])
	case dnstargets.IsSRV(value):
		l.errorf(p.k, "port", "an SRV name (%s) carries each host's port in its records; remove port:", value)
	default:
		d.dnsPort, _ = l.int(p.v, "port", 1, 65535, "write the TCP port of the hosts' rdmarun serve, from 1 to 65535 (default "+ctrl.DefaultPort+")")
	}
}

// deviceList reads a list of device names, each named once.
func (l *loader) deviceList(v *yaml.Node, key string) []string {
	items, ok := l.items(v, key, allowedDevices)
	if !ok {
		return nil
	}
	seen := map[string]*yaml.Node{}
	var devices []string
	for _, it := range items {
		switch first, dup := seen[it.s]; {
		case it.s == "":
			l.errorf(it.n, key, "empty device name; %s", allowedDevices)
			return nil
		case strings.ContainsAny(it.s, " \t"):
			l.errorf(it.n, key, "%q is not a device name; %s", it.s, allowedDevices)
			return nil
		case dup:
			l.errorf(it.n, key, "device %s is listed twice (first at line %d); list each device once", it.s, first.Line)
			return nil
		case it.s == autoDevices:
			// A device of that name would be a typo for the fleet's
			// auto, whose place is the top level.
			l.errorf(it.n, key, "auto asks every host's responder for its devices and applies to the whole fleet: write devices: auto at the top level, and list a host's own devices by name")
			return nil
		}
		seen[it.s] = it.n
		devices = append(devices, it.s)
	}
	return devices
}

func (l *loader) parsePattern(d *fleetDraft, v *yaml.Node) {
	names := make([]string, len(fleet.Patterns))
	for i, p := range fleet.Patterns {
		names[i] = string(p)
	}
	allowed := "write " + yamlerr.OrList(names)
	s, ok := l.text(v, "pattern", allowed)
	if !ok {
		return
	}
	s = strings.TrimSpace(s)
	for _, p := range fleet.Patterns {
		if string(p) == s {
			d.f.Pattern, d.pattern = p, yamlerr.Resolve(v)
			return
		}
	}
	msg := fmt.Sprintf("%q is not a pattern; %s", s, allowed)
	if dym := yamlerr.DidYouMean(s, names, true); dym != "" {
		msg += "; " + dym
	}
	l.errorf(yamlerr.Resolve(v), "pattern", "%s", msg)
}

// parsePairs reads pairs: as host names; checkPairs matches them to the
// hosts once those are known.
func (l *loader) parsePairs(d *fleetDraft, v *yaml.Node) {
	n := yamlerr.Resolve(v)
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, "pairs", "want a list, not %s; %s", yamlerr.Describe(n), allowedPairs)
		return
	}
	if len(n.Content) == 0 {
		l.errorf(n, "pairs", "empty list, so pattern pairs yields no pair; %s", allowedPairs)
		return
	}
	for _, c := range n.Content {
		c = yamlerr.Resolve(c)
		if c.Kind != yaml.SequenceNode || len(c.Content) != 2 {
			l.errorf(c, "pairs", "want a pair [initiator, responder], not %s; %s", describeLen(c), allowedPairs)
			continue
		}
		var names [2]string
		var nodes [2]*yaml.Node
		ok := true
		for e, en := range c.Content {
			s, good := l.text(en, "pairs", "write a host name of hosts:")
			ok = ok && good
			names[e], nodes[e] = strings.TrimSpace(s), yamlerr.Resolve(en)
		}
		if ok {
			d.f.Options.Pairs = append(d.f.Options.Pairs, names)
			d.pairs = append(d.pairs, nodes)
		}
	}
}

// describeLen is describe, saying how long a list is.
func describeLen(n *yaml.Node) string {
	if n.Kind == yaml.SequenceNode {
		return fmt.Sprintf("a list of %d", len(n.Content))
	}
	return yamlerr.Describe(n)
}

func (l *loader) lagFactor(v *yaml.Node) (float64, bool) {
	s, ok := l.scalar(v, "lag_factor", allowedLag)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) {
		l.errorf(yamlerr.Resolve(v), "lag_factor", "%q is not a number; %s", s, allowedLag)
		return 0, false
	}
	if f <= 1 || f > maxLagFactor {
		l.errorf(yamlerr.Resolve(v), "lag_factor", "%s is out of range; %s", s, allowedLag)
		return 0, false
	}
	return f, true
}

// checkFleet decides, once every top-level key is read, whether the
// scenario is a fleet, refuses the one-pair keys beside hosts: (and the
// fleet keys without it), and plans an inline list's pairs.
func (l *loader) checkFleet(sc *Scenario, top map[string]*pair) {
	d := l.fleet
	if d == nil {
		return
	}
	if _, ok := d.keys["hosts"]; !ok {
		for _, key := range fleetKeys {
			if k, ok := d.keys[key]; ok {
				l.errorf(k, key, "applies to a fleet scenario only; add hosts: to run on a fleet, or remove %s:", key)
			}
		}
		return
	}
	sc.Fleet = d.f
	// peer: is one pair's responder; a fleet's are its hosts.
	sc.Peer = ""
	fix := map[string]string{
		"peer":        "a fleet scenario runs between its hosts; remove peer: (or hosts: to test one pair)",
		"device":      "use devices: for every host, or a host's own as {name: node1, devices: [mlx5_0]}",
		"peer_device": "use devices: for every host, or a host's own as {name: node1, devices: [mlx5_0]}",
	}
	for _, key := range []string{"peer", "device", "peer_device"} {
		if p, ok := top[key]; ok {
			l.errorf(p.k, key, "does not go with hosts:; %s", fix[key])
			d.bad = true
		}
	}
	f := d.f
	// A pattern that was itself wrong is reported; checking the keys
	// against the default in its place would only add echoes.
	patternKnown := d.keys["pattern"] == nil || d.pattern != nil
	if k, ok := d.keys["pairs"]; ok && patternKnown && f.Pattern != fleet.ExplicitPairs {
		if d.pattern == nil {
			l.errorf(k, "pairs", "applies to pattern: pairs only; add pattern: pairs")
		} else {
			l.errorf(k, "pairs", "applies to pattern: pairs only, not %s; write pattern: pairs, or remove pairs:", f.Pattern)
		}
		d.bad = true
	}
	if f.Pattern == fleet.ExplicitPairs && d.keys["pairs"] == nil {
		l.errorf(d.pattern, "pattern", "pairs needs pairs:; %s", allowedPairs)
		d.bad = true
	}
	if k, ok := d.keys["both_directions"]; ok && patternKnown && f.Options.BothDirections && f.Pattern != fleet.AllPairs && f.Pattern != fleet.Rail {
		l.errorf(k, "both_directions", "applies to all-pairs and rail only; %s fixes each pair's direction", f.Pattern)
		d.bad = true
	}
	if f.Source.Kind == HostsList && !d.bad {
		l.planFleet(d, d.list)
	}
}
