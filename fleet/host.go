package fleet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

// Host is one machine of a fleet, reached through its rdmarun serve.
type Host struct {
	// Name is how outputs show the host: the name as listed, with the
	// port only when one was given.
	Name string `json:"name"`
	// Addr is host:port of its rdmarun serve; empty means Name, and a
	// missing port means ctrl.DefaultPort.
	Addr string `json:"addr"`
	// Devices are the RDMA devices to test on this host; empty means the
	// serve's default device. Rail patterns pair Devices[i] with the
	// Devices[i] of every other host.
	Devices []string `json:"devices,omitempty"`
	// Labels place the host for the outputs of a large fleet, which
	// group hosts by one of them (group_by: rack): rack=r03, rail=1.
	Labels map[string]string `json:"labels,omitempty"`
}

// DialAddr is the host:port to dial, with Addr's defaults applied.
func (h Host) DialAddr() string {
	addr := h.Addr
	if addr == "" {
		addr = h.Name
	}
	return ctrl.WithDefaultPort(addr)
}

// ParseHostfile reads one host per line:
//
//	# comment
//	node1
//	node2:18521 devices=mlx5_0,mlx5_1
//	[fd00::3]:18520 slots=8
//	node17 rack=r03 rail=1
//
// A line is HOST, HOST:PORT, [IPV6]:PORT or a bare IPv6 address, then
// optional key=value words: devices= (a comma list), MPI's slots= and
// max_slots=, which are accepted so an MPI hostfile can be reused and
// otherwise ignored, and labels (any other key, see CheckLabel). A key
// within a typo of devices=, slots= or max_slots= is refused rather than
// taken for a label, so device=mlx5_0 does not silently test the default
// device. name is the file's name for errors, which read NAME:LINE:COL:
// what is wrong; how to fix it.
func ParseHostfile(r io.Reader, name string) ([]Host, error) {
	var hosts []Host
	firstLine := map[string]int{} // dial address, lower case -> line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		words := splitWords(line)
		if len(words) == 0 {
			continue
		}
		at := func(w word, format string, args ...any) error {
			return fmt.Errorf("%s:%d:%d: %s", name, lineNo, w.col, fmt.Sprintf(format, args...))
		}
		h, err := ParseHost(words[0].text)
		if err != nil {
			return nil, at(words[0], "%v", err)
		}
		sawDevices := false
		for _, w := range words[1:] {
			key, value, ok := strings.Cut(w.text, "=")
			switch {
			case !ok:
				return nil, at(w, "%q is not key=value; one host per line, then devices=DEV,DEV", w.text)
			case key == "devices":
				if sawDevices {
					return nil, at(w, "devices= given twice; list every device in one devices=DEV,DEV")
				}
				sawDevices = true
				devs, err := parseDevices(value)
				if err != nil {
					return nil, at(w, "devices: %v", err)
				}
				h.Devices = devs
			case key == "slots" || key == "max_slots":
				// MPI's process counts mean nothing to a serve.
			default:
				if err := hostfileLabel(&h, key, value); err != nil {
					return nil, at(w, "%v", err)
				}
			}
		}
		k := strings.ToLower(h.DialAddr())
		if first, dup := firstLine[k]; dup {
			return nil, at(words[0], "host %s is listed twice (lines %d and %d); remove one", h.DialAddr(), first, lineNo)
		}
		firstLine[k] = lineNo
		hosts = append(hosts, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%s: no hosts; list one host per line", name)
	}
	return hosts, nil
}

type word struct {
	text string
	col  int // 1-based byte column
}

func splitWords(line string) []word {
	var words []word
	start := -1
	for i := 0; i <= len(line); i++ {
		space := i == len(line) || line[i] == ' ' || line[i] == '\t' || line[i] == '\r'
		switch {
		case space && start >= 0:
			words = append(words, word{line[start:i], start + 1})
			start = -1
		case !space && start < 0:
			start = i
		}
	}
	return words
}

// ParseHost reads one host as a hostfile line or a scenario's host list
// names it: HOST, HOST:PORT, [IPV6], [IPV6]:PORT or a bare IPv6 address.
// The Host's Name is the spec as written (an IPv6 address without its
// brackets when no port follows); its Addr always carries a port.
func ParseHost(spec string) (Host, error) {
	host, port := spec, ""
	switch {
	case strings.HasPrefix(spec, "["):
		end := strings.IndexByte(spec, ']')
		if end < 0 {
			return Host{}, fmt.Errorf("%q has no closing ]; write [IPV6]:PORT", spec)
		}
		host, rest := spec[1:end], spec[end+1:]
		if net.ParseIP(host) == nil || !strings.Contains(host, ":") {
			return Host{}, fmt.Errorf("%q is not an IPv6 address; brackets are only for IPv6", host)
		}
		if rest == "" {
			return Host{Name: host, Addr: net.JoinHostPort(host, ctrl.DefaultPort)}, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return Host{}, fmt.Errorf("%q: expected :PORT after ], as in [IPV6]:PORT", spec)
		}
		port = rest[1:]
		if err := checkPort(port); err != nil {
			return Host{}, fmt.Errorf("%q: %v", spec, err)
		}
		return Host{Name: net.JoinHostPort(host, port), Addr: net.JoinHostPort(host, port)}, nil
	case strings.Count(spec, ":") > 1:
		if ip := net.ParseIP(spec); ip != nil {
			return Host{Name: spec, Addr: net.JoinHostPort(spec, ctrl.DefaultPort)}, nil
		}
		return Host{}, fmt.Errorf("%q has several colons but is not an IPv6 address; write [IPV6]:PORT", spec)
	case strings.Contains(spec, ":"):
		host, port, _ = strings.Cut(spec, ":")
		if err := checkPort(port); err != nil {
			return Host{}, fmt.Errorf("%q: %v", spec, err)
		}
	}
	if err := checkHostName(host); err != nil {
		return Host{}, err
	}
	if port == "" {
		return Host{Name: host, Addr: net.JoinHostPort(host, ctrl.DefaultPort)}, nil
	}
	return Host{Name: spec, Addr: spec}, nil
}

func checkPort(port string) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

// checkHostName accepts DNS names and IPv4 addresses: letters, digits, '-',
// '_' and '.', which also keeps commas and '=' from a mistyped line out
// of the name.
func checkHostName(host string) error {
	if host == "" {
		return errors.New("empty host name; write HOST or HOST:PORT")
	}
	for _, c := range host {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return fmt.Errorf("host name %q has %q; a name holds letters, digits, '-', '_' and '.'", host, c)
		}
	}
	return nil
}

func parseDevices(list string) ([]string, error) {
	if list == "" {
		return nil, errors.New("empty list; write devices=DEV,DEV or leave it out for the default device")
	}
	devs := strings.Split(list, ",")
	seen := map[string]bool{}
	for i, d := range devs {
		if d == "" {
			return nil, fmt.Errorf("device %d of %q is empty; remove the extra comma", i+1, list)
		}
		if seen[d] {
			return nil, fmt.Errorf("device %s is listed twice; list each device once", d)
		}
		seen[d] = true
	}
	return devs, nil
}

// CheckHosts checks a host list from any source: every host has a name,
// no two hosts dial the same address (after the default port is applied)
// or share a name, and each host's devices are named and distinct.
func CheckHosts(hosts []Host) error {
	if len(hosts) == 0 {
		return errors.New("no hosts; list at least one")
	}
	byAddr := map[string]int{}
	byName := map[string]int{}
	for i, h := range hosts {
		if strings.TrimSpace(h.Name) == "" {
			return fmt.Errorf("host %d has an empty name; give every host a name", i+1)
		}
		addr := strings.ToLower(h.DialAddr())
		if j, dup := byAddr[addr]; dup {
			return fmt.Errorf("hosts %d (%s) and %d (%s) both dial %s; remove one", j+1, hosts[j].Name, i+1, h.Name, h.DialAddr())
		}
		byAddr[addr] = i
		if j, dup := byName[h.Name]; dup {
			return fmt.Errorf("hosts %d and %d are both named %s; names must be unique", j+1, i+1, h.Name)
		}
		byName[h.Name] = i
		seen := map[string]bool{}
		for _, d := range h.Devices {
			if d == "" {
				return fmt.Errorf("host %s has an empty device name; remove it or name the device", h.Name)
			}
			if seen[d] {
				return fmt.Errorf("host %s lists device %s twice; list each device once", h.Name, d)
			}
			seen[d] = true
		}
		for _, k := range slices.Sorted(maps.Keys(h.Labels)) {
			if err := CheckLabel(k, h.Labels[k]); err != nil {
				return fmt.Errorf("host %s: %v", h.Name, err)
			}
		}
	}
	return nil
}

// hostfileKeys are the keys a hostfile line gives that are not labels.
var hostfileKeys = []string{"devices", "slots", "max_slots"}

// maxLabelLen bounds a label's key and value: a label names a rack or a
// switch for a heading, and a page of groups must stay small.
const maxLabelLen = 63

// hostfileLabel adds key=value of a hostfile line to h's labels.
func hostfileLabel(h *Host, key, value string) error {
	if near := yamlerr.Suggest(key, hostfileKeys); len(near) > 0 {
		return fmt.Errorf("unknown key %q, too close to %s= to be taken for a label; did you mean %s=?", key, near[0], near[0])
	}
	if err := CheckLabel(key, value); err != nil {
		return err
	}
	if _, dup := h.Labels[key]; dup {
		return fmt.Errorf("label %s= given twice; give each label once", key)
	}
	if h.Labels == nil {
		h.Labels = map[string]string{}
	}
	h.Labels[key] = value
	return nil
}

// CheckLabel checks one host label. A key starts with a letter and holds
// letters, digits, '_', '-' and '.'; a value holds those and ':' and '/',
// so that either reads as one word in a hostfile, a heading or a file of
// the HTML report, each at most 63 characters. devices, slots and
// max_slots are a hostfile's own keys, never labels.
func CheckLabel(key, value string) error {
	switch {
	case key == "":
		return fmt.Errorf("a label with no key (=%s); write KEY=VALUE, such as rack=r03", value)
	case slices.Contains(hostfileKeys, key):
		return fmt.Errorf("%s is a hostfile key, not a label; name the label otherwise", key)
	case len(key) > maxLabelLen:
		return fmt.Errorf("label key %.20q... is %d characters; keep it to %d", key, len(key), maxLabelLen)
	case !isLetter(rune(key[0])):
		return fmt.Errorf("label key %q starts with %q; start it with a letter, as in rack=r03", key, key[0])
	}
	for _, c := range key {
		if !isLetter(c) && !isDigit(c) && !strings.ContainsRune("_-.", c) {
			return fmt.Errorf("label key %q has %q; a key holds letters, digits, '_', '-' and '.'", key, c)
		}
	}
	switch {
	case value == "":
		return fmt.Errorf("label %s= has no value; write %s=VALUE, or leave it out", key, key)
	case len(value) > maxLabelLen:
		return fmt.Errorf("label %s= value is %d characters; keep it to %d", key, len(value), maxLabelLen)
	}
	for _, c := range value {
		if !isLetter(c) && !isDigit(c) && !strings.ContainsRune("_-.:/", c) {
			return fmt.Errorf("label %s=%s has %q; a value holds letters, digits, '_', '-', '.', ':' and '/'", key, value, c)
		}
	}
	return nil
}

func isLetter(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c rune) bool  { return c >= '0' && c <= '9' }
