package sysfs

import (
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
)

// Enum is a value the kernel writes as "N: NAME", as in state's
// "4: ACTIVE". The number is what the InfiniBand specification defines;
// the names have changed across kernels.
type Enum struct {
	Num  int
	Name string
}

func parseEnum(s string) (Enum, error) {
	num, name, found := strings.Cut(strings.TrimSpace(s), ":")
	n, err := strconv.Atoi(num)
	if !found || err != nil {
		return Enum{}, errors.New(`not of the form "N: NAME": ` + strconv.Quote(s))
	}
	return Enum{Num: n, Name: strings.TrimSpace(name)}, nil
}

// parseRate reads the kernel's "100 Gb/sec (4X EDR)" or
// "2.5 Gb/sec (1X SDR)" as gigabits per second.
func parseRate(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) >= 2 && f[1] == "Gb/sec" {
		if v, err := strconv.ParseFloat(f[0], 64); err == nil && v >= 0 && !math.IsInf(v, 1) {
			return v, nil
		}
	}
	return 0, errors.New(`not of the form "N Gb/sec": ` + strconv.Quote(s))
}

// parseCounter reads one counter file: a decimal number, usually followed
// by a newline.
func parseCounter(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty counter file")
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		// ParseUint returns the maximum on overflow; a clamped counter
		// would produce a bogus delta or rate, so report nothing instead.
		return 0, errors.New("not a decimal counter: " + strconv.Quote(t))
	}
	return v, nil
}

// parseLID reads the kernel's hexadecimal "0x1a".
func parseLID(s string) (uint16, error) {
	t := strings.TrimSpace(s)
	v, err := strconv.ParseUint(strings.TrimPrefix(t, "0x"), 16, 16)
	if err != nil {
		return 0, errors.New("not a hexadecimal LID: " + strconv.Quote(t))
	}
	return uint16(v), nil
}

// parseGID reads one gids/N file. ok is false for an empty slot, which
// the kernel shows as the all-zero GID.
func parseGID(s string) (gid net.IP, ok bool) {
	ip := net.ParseIP(strings.TrimSpace(s))
	if ip == nil || ip.IsUnspecified() {
		return nil, false
	}
	return ip.To16(), true
}

// parseGIDType reads gid_attrs/types/N: "RoCE v2", or "IB/RoCE v1" for
// both InfiniBand and RoCE v1 entries. ok is false for an empty slot,
// whose attribute the kernel leaves empty (or answers EINVAL for).
func parseGIDType(s string) (roceV2, ok bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return false, false
	}
	return strings.Contains(t, "v2"), true
}
