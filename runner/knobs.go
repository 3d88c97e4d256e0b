package runner

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/rdma"
	"github.com/rdmarun/rdmarun/units"
)

// Knob is an engine setting: a key a case or defaults: may give, and a
// flag of `rdmarun bench`. It is declared once, in knobs, so the YAML
// key, the flag, the help and runner/README.md cannot drift apart.
type Knob struct {
	Name    string // the YAML key; the flag is Flag()
	Type    string // what a value is, as the docs name it
	Unit    string // "" when the value has none
	Default string // what runs when the knob is not given
	Help    string
	// Aliases are further flag spellings, where a perftest user expects a
	// shorter one (--iters for --iterations).
	Aliases []string
}

// Flag is the knob's bench flag: its name with - for _.
func (k Knob) Flag() string { return strings.ReplaceAll(k.Name, "_", "-") }

// IsBool reports whether the knob is a switch (a flag without a value).
func (k Knob) IsBool() bool { return k.Type == typeBool }

// Knobs lists the engine settings in documentation order.
func Knobs() []Knob {
	out := make([]Knob, len(knobs))
	for i, k := range knobs {
		out[i] = k.Knob
	}
	return out
}

// LookupKnob finds a knob by its YAML key, its flag or an alias.
func LookupKnob(name string) (Knob, bool) {
	for _, k := range knobs {
		if k.Name == name || k.Flag() == name || slices.Contains(k.Aliases, name) {
			return k.Knob, true
		}
	}
	return Knob{}, false
}

// knob is a Knob with its parser.
type knob struct {
	Knob
	allowed string
	// read parses the value node v; scalar knobs use scalarKnob.
	read func(l *loader, v *yaml.Node, key, allowed string) (func(*rdma.TestSpec), bool)
}

const (
	typeInt      = "integer"
	typeBool     = "bool"
	typeDuration = "duration"
	typeBytes    = "bytes"
)

// scalarKnob adapts a parser of one value, given with its variables
// substituted, into a knob reader.
func scalarKnob(parse func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool)) func(*loader, *yaml.Node, string, string) (func(*rdma.TestSpec), bool) {
	return func(l *loader, v *yaml.Node, key, allowed string) (func(*rdma.TestSpec), bool) {
		s, ok := l.scalar(v, key, allowed)
		if !ok {
			return nil, false
		}
		return parse(l, yamlerr.Resolve(v), key, strings.TrimSpace(s), allowed)
	}
}

func knobKeys() []string {
	out := make([]string, len(knobs))
	for i, k := range knobs {
		out[i] = k.Name
	}
	return out
}

// intKnob is a whole-number setting from lo to hi. Where the engine reads
// 0 as "its default", lo is 1 and the message says why.
func intKnob(k Knob, lo, hi int, note string, set func(*rdma.TestSpec, int)) knob {
	allowed := fmt.Sprintf("write a whole number from %d to %d", lo, hi)
	if hi >= math.MaxInt32 {
		allowed = fmt.Sprintf("write a whole number of %d or more", lo)
	}
	if note != "" {
		allowed += " (" + note + ")"
	}
	if k.Type == "" {
		k.Type = typeInt
	}
	return knob{k, allowed, scalarKnob(func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool) {
		v, ok := l.intValue(n, key, s, lo, hi, allowed)
		return func(t *rdma.TestSpec) { set(t, v) }, ok
	})}
}

func boolKnob(k Knob, set func(*rdma.TestSpec, bool)) knob {
	k.Type, k.Default = typeBool, "false"
	return knob{k, "write true or false", scalarKnob(func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool) {
		switch strings.ToLower(s) {
		case "true":
			return func(t *rdma.TestSpec) { set(t, true) }, true
		case "false":
			return func(t *rdma.TestSpec) { set(t, false) }, true
		}
		l.errorf(n, key, "%q is not true or false; %s", s, allowed)
		return nil, false
	})}
}

func durationKnob(k Knob, set func(*rdma.TestSpec, time.Duration)) knob {
	const allowed = "write a positive duration with a unit: ns, us, ms, s, m, h (e.g. 5s, 1.5ms)"
	k.Type = typeDuration
	return knob{k, allowed, scalarKnob(func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool) {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			l.errorf(n, key, "%q is not a duration; %s", s, allowed)
		case d <= 0:
			l.errorf(n, key, "%s is not positive; %s", s, allowed)
		default:
			return func(t *rdma.TestSpec) { set(t, d) }, true
		}
		return nil, false
	})}
}

const engineDefault = "0 would mean the engine's default"

var knobs = []knob{
	intKnob(Knob{Name: "iterations", Unit: "per QP", Default: "1000 (latency), 5000 (bandwidth)", Aliases: []string{"iters"},
		Help: "Round trips (latency) or messages (bandwidth) per QP."},
		1, math.MaxInt32, "", func(t *rdma.TestSpec, v int) { t.Iterations, t.Duration = v, 0 }),
	durationKnob(Knob{Name: "duration", Default: "none: iterations bound the run",
		Help: "Run for this long instead of a number of iterations."},
		func(t *rdma.TestSpec, d time.Duration) { t.Duration, t.Iterations = rdma.Duration(d), 0 }),
	intKnob(Knob{Name: "warmup", Unit: "round trips per QP", Default: "10% of iterations, at most 100",
		Help: "Latency round trips before the measured ones."},
		1, math.MaxInt32, engineDefault+", 10% of iterations up to 100", func(t *rdma.TestSpec, v int) { t.Warmup = v }),
	intKnob(Knob{Name: "threads", Unit: "per side", Default: "1",
		Help: "Threads per side; the QPs are spread over them."},
		1, 4096, "at most qps", func(t *rdma.TestSpec, v int) { t.Threads = v }),
	{Knob{Name: "cpus", Type: "list of CPU numbers", Default: "unpinned",
		Help: "Pin the threads to these CPUs, round robin (e.g. 0,1)."},
		"write a CPU number or a list such as [0, 2]", readCPUs},
	intKnob(Knob{Name: "tx_depth", Unit: "WRs per QP", Default: "128 (bandwidth), 16 (latency)",
		Help: "Outstanding send WRs per QP."},
		1, 16384, "", func(t *rdma.TestSpec, v int) { t.TxDepth = v }),
	intKnob(Knob{Name: "rx_depth", Unit: "WRs per QP", Default: "512 (bandwidth), 16 (latency)",
		Help: "Receives kept posted per QP."},
		1, 16384, "", func(t *rdma.TestSpec, v int) { t.RxDepth = v }),
	boolKnob(Knob{Name: "srq",
		Help: "Each side's QPs take their receives from one shared receive queue (send, send_imm, write_imm), as a server with many clients does."},
		func(t *rdma.TestSpec, v bool) { t.SRQ = v }),
	intKnob(Knob{Name: "srq_depth", Unit: "WRs per side", Default: "rx_depth (with srq)",
		Help: "Receives the shared receive queue holds; too few for the senders' window makes RNR NAKs, reported with the queue's limit events."},
		1, 16384, "with srq: true", func(t *rdma.TestSpec, v int) { t.SRQDepth = v }),
	intKnob(Knob{Name: "cq_moderation", Unit: "WRs", Default: "min(100, tx_depth)", Aliases: []string{"cq-mod"},
		Help: "Signal every Nth send WR and a run's last. Latency runs given by a duration, and read and atomic latency, signal every WR."},
		1, 16384, "at most tx_depth", func(t *rdma.TestSpec, v int) { t.CQModeration = v }),
	intKnob(Knob{Name: "post_list", Unit: "WRs", Default: "1",
		Help: "WRs per ibv_post_send call (bandwidth)."},
		1, 16384, "at most tx_depth", func(t *rdma.TestSpec, v int) { t.PostList = v }),
	{Knob{Name: "inline", Type: typeBytes, Unit: "bytes", Default: "0",
		Help: "Largest message sent inline (0: none)."},
		"write a number of bytes from 0 to 4096, with an optional unit", scalarKnob(func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool) {
			b, err := units.ParseBytes(s)
			if err != nil || b > 4096 {
				l.errorf(n, key, "%q is not a size from 0 to 4096 bytes; %s", s, allowed)
				return nil, false
			}
			return func(t *rdma.TestSpec) { t.Inline = int(b) }, true
		})},
	boolKnob(Knob{Name: "bidirectional", Aliases: []string{"bidir"},
		Help: "Bidirectional bandwidth: both ends send."},
		func(t *rdma.TestSpec, v bool) { t.Bidirectional = v }),
	boolKnob(Knob{Name: "hugepages",
		Help: "Put the buffers on 2 MiB huge pages (reserve them first in /proc/sys/vm/nr_hugepages)."},
		func(t *rdma.TestSpec, v bool) { t.Hugepages = v }),
	boolKnob(Knob{Name: "validate",
		Help: "Write a random pattern and check that it arrived."},
		func(t *rdma.TestSpec, v bool) { t.Validate = v }),
	{Knob{Name: "seed", Type: typeInt, Default: "random",
		Help: "Seed of the --validate pattern, to repeat a run."},
		"write a whole number of 0 or more", scalarKnob(func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool) {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				l.errorf(n, key, "%q is not a whole number; %s", s, allowed)
				return nil, false
			}
			return func(t *rdma.TestSpec) { t.Seed = v }, true
		})},
	durationKnob(Knob{Name: "stall_timeout", Default: "5s",
		Help: "End the run when nothing happens for this long."},
		func(t *rdma.TestSpec, d time.Duration) { t.StallTimeout = rdma.Duration(d) }),
	durationKnob(Knob{Name: "loss_timeout", Default: "1s (with qp_type: ud)",
		Help: "With qp_type: ud, a message or a round trip's answer not arrived this long after it could have is counted lost, and the run moves on."},
		func(t *rdma.TestSpec, d time.Duration) { t.LossTimeout = rdma.Duration(d) }),
	{Knob{Name: "qp_type", Type: "rc, uc or ud", Default: "rc",
		Help: "Transport: reliable connected, unreliable connected, or unreliable datagram (send and send_imm, one packet per message)."},
		"write rc, uc or ud", scalarKnob(func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool) {
			q, err := rdma.ParseQPType(s)
			if err != nil {
				l.errorf(n, key, "%q is not a QP type; %s%s", s, allowed, hint(s, []string{"rc", "uc", "ud"}))
				return nil, false
			}
			return func(t *rdma.TestSpec) { t.QPType = q }, true
		})},
	{Knob{Name: "multicast", Type: "a multicast address, or auto", Default: "none (unicast)",
		Help: "With qp_type: ud, op: send, measure: bandwidth and one QP: send to this multicast group (auto: a group in 239.255.0.0/16 drawn for each run), which the peer and every responder in receivers join through the CM; each receiver's count is reported."},
		"write a multicast address such as 239.1.1.1, or auto", scalarKnob(func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool) {
			if g, err := netip.ParseAddr(s); s != rdma.MulticastAuto && (err != nil || !g.IsMulticast()) {
				l.errorf(n, key, "%q is not a multicast address; %s", s, allowed)
				return nil, false
			}
			return func(t *rdma.TestSpec) { t.Multicast = s }, true
		})},
	{Knob{Name: "receivers", Type: "list of HOST[:PORT]", Default: "none: the peer only",
		Help: "With multicast: more rdmarun serve responders that join the group and receive, besides the peer (e.g. 10.0.0.3,10.0.0.4)."},
		"write HOST[:PORT] of rdmarun serve, or a list such as [10.0.0.3, 10.0.0.4:18520]", readReceivers},
	{Knob{Name: "connect", Type: "exchange or rdma_cm", Default: "exchange",
		Help: "How the QPs connect: exchange (QPNs and GIDs over the control channel, as perftest) or rdma_cm (through the RDMA connection manager, as applications and perftest -R do)."},
		"write exchange or rdma_cm", scalarKnob(func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool) {
			c, err := rdma.ParseConnect(s)
			if err != nil {
				l.errorf(n, key, "%q is not a way to connect; %s%s", s, allowed, hint(s, rdma.ConnectNames()))
				return nil, false
			}
			return func(t *rdma.TestSpec) { t.Connect = c }, true
		})},
	intKnob(Knob{Name: "connect_parallel", Unit: "QPs", Default: "1 (with connect: rdma_cm)",
		Help: "With connect: rdma_cm, how many QPs connect at once (1: one after another); measure connect reports the connections per second."},
		1, 4096, "at most qps; only with connect: rdma_cm", func(t *rdma.TestSpec, v int) { t.ConnectParallel = v }),
	{Knob{Name: "mtu", Type: "256, 512, 1024, 2048 or 4096", Unit: "bytes", Default: "the ports' active MTU",
		Help: "Path MTU."},
		"write 256, 512, 1024, 2048 or 4096 (omit it for the port's active MTU)", scalarKnob(func(l *loader, n *yaml.Node, key, s, allowed string) (func(*rdma.TestSpec), bool) {
			v, err := strconv.Atoi(s)
			if err == nil {
				_, err = rdma.MTUEnum(v)
			}
			if err != nil {
				l.errorf(n, key, "%q is not a path MTU; %s", s, allowed)
				return nil, false
			}
			return func(t *rdma.TestSpec) { t.QP.MTU = &v }, true
		})},
	intKnob(Knob{Name: "timeout", Unit: "exponent", Default: "17", Aliases: []string{"qp-timeout"},
		Help: "QP local ACK timeout: 4.096 us * 2^timeout (17: 0.54 s; reads: more, to cover the responses owed)."},
		0, 31, "4.096 us * 2^timeout, 0 waits forever; default 17, more for reads", func(t *rdma.TestSpec, v int) { t.QP.Timeout = &v }),
	intKnob(Knob{Name: "retry_cnt", Default: "6",
		Help: "QP transport retries (soft-RoCE retries 7 forever)."},
		0, 7, "default 6; soft-RoCE retries 7 forever", func(t *rdma.TestSpec, v int) { t.QP.RetryCnt = &v }),
	intKnob(Knob{Name: "rnr_retry", Default: "7",
		Help: "QP receiver-not-ready retries (7: forever)."},
		0, 7, "7 retries forever; default 7", func(t *rdma.TestSpec, v int) { t.QP.RNRRetry = &v }),
	intKnob(Knob{Name: "min_rnr_timer", Unit: "IB timer code", Default: "12 (0.64 ms)",
		Help: "Delay the responder asks for after a receiver-not-ready NAK."},
		0, 31, "default 12 = 0.64 ms", func(t *rdma.TestSpec, v int) { t.QP.MinRNRTimer = &v }),
	intKnob(Knob{Name: "max_rd_atomic", Unit: "per QP", Default: "1",
		Help: "Outstanding reads and atomics per QP."},
		1, 255, "", func(t *rdma.TestSpec, v int) { t.QP.MaxRdAtomic = &v }),
	intKnob(Knob{Name: "sl", Default: "0",
		Help: "Service level."},
		0, 15, "", func(t *rdma.TestSpec, v int) { t.QP.SL = &v }),
	intKnob(Knob{Name: "traffic_class", Default: "0", Aliases: []string{"tclass"},
		Help: "Traffic class (RoCE: DSCP << 2 | ECN)."},
		0, 255, "", func(t *rdma.TestSpec, v int) { t.QP.TrafficClass = &v }),
	intKnob(Knob{Name: "hop_limit", Default: "64",
		Help: "GRH hop limit."},
		1, 255, "default 64", func(t *rdma.TestSpec, v int) { t.QP.HopLimit = &v }),
}

// knob reads one engine setting, returning what it sets or nil.
func (l *loader) knob(key string, v *yaml.Node) func(*rdma.TestSpec) {
	for _, k := range knobs {
		if k.Name == key {
			if f, ok := k.read(l, v, key, k.allowed); ok {
				return f
			}
			return nil
		}
	}
	return nil
}

func readCPUs(l *loader, v *yaml.Node, key, allowed string) (func(*rdma.TestSpec), bool) {
	its, ok := l.items(v, key, allowed)
	if !ok {
		return nil, false
	}
	var cpus []int
	for _, it := range its {
		n, ok := l.intValue(it.n, key, it.s, 0, 1<<16, allowed)
		if !ok {
			return nil, false
		}
		cpus = append(cpus, n)
	}
	return func(t *rdma.TestSpec) { t.CPUs = slices.Clone(cpus) }, true
}

func readReceivers(l *loader, v *yaml.Node, key, allowed string) (func(*rdma.TestSpec), bool) {
	its, ok := l.items(v, key, allowed)
	if !ok {
		return nil, false
	}
	var addrs []string
	for _, it := range its {
		if !l.checkAddress(it.n, key, it.s) {
			return nil, false
		}
		addrs = append(addrs, it.s)
	}
	return func(t *rdma.TestSpec) { t.Receivers = slices.Clone(addrs) }, true
}

// Check reports whether value is one the knob accepts, with the error a
// scenario would give for it.
func (k Knob) Check(value string) error {
	l := &loader{spelled: map[string]string{k.Name: "--" + k.Flag()}}
	for _, kn := range knobs {
		if kn.Name == k.Name {
			kn.read(l, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}, k.Name, kn.allowed)
		}
	}
	return l.c.Err()
}
