package mesh

import (
	"strings"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// ringHash places a name on the ring of an epoch. Every node must compute
// the same value, so it is FNV-1a 64 over the name and the epoch as 8 bytes
// little endian (not hash/maphash, whose seed is per process), followed by
// a 64-bit finaliser: FNV alone mixes the last bytes into the high bits
// poorly, so names differing only in a digit, or one name in two adjacent
// epochs, would land close together and the rings of successive epochs
// would be alike, which slows coverage.
func ringHash(name string, epoch uint64) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= prime
	}
	for i := 0; i < 8; i++ {
		h ^= epoch >> (8 * i) & 0xff
		h *= prime
	}
	// The finaliser of splitmix64: every input bit flips about half of
	// the output bits.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// rank is a target's place after self on the ring.
type rank struct {
	// dist is how far the target's hash lies after self's, wrapping.
	dist uint64
	// wrapped marks a target whose hash equals self's but whose name sorts
	// before self's: on the ring ordered by (hash, name) it comes just
	// before self, so it is the farthest successor, not the nearest.
	wrapped bool
	idx     int32
}

// successors keeps the K nearest successors of self seen so far in a
// max-heap, the farthest at the root, so each offer costs O(log K).
type successors struct {
	self     string
	selfHash uint64
	all      []config.Target
	heap     []rank // cap is K
}

func (s *successors) offer(i int, epoch uint64) {
	if cap(s.heap) == 0 {
		return
	}
	t := &s.all[i]
	r := rank{dist: ringHash(t.Name, epoch) - s.selfHash, idx: int32(i)}
	if r.dist == 0 && t.Name < s.self {
		r.wrapped = true
	}
	if len(s.heap) < cap(s.heap) {
		s.heap = append(s.heap, r)
		s.up(len(s.heap) - 1)
		return
	}
	if s.farther(s.heap[0], r) {
		s.heap[0] = r
		s.down(0)
	}
}

// farther reports whether a lies farther from self along the ring than b.
// Equal hashes are ordered by name, then address, as the ring is.
func (s *successors) farther(a, b rank) bool {
	if a.wrapped != b.wrapped {
		return a.wrapped
	}
	if a.dist != b.dist {
		return a.dist > b.dist
	}
	ta, tb := &s.all[a.idx], &s.all[b.idx]
	if c := strings.Compare(ta.Name, tb.Name); c != 0 {
		return c > 0
	}
	return ta.Address > tb.Address
}

func (s *successors) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !s.farther(s.heap[j], s.heap[p]) {
			return
		}
		s.heap[j], s.heap[p] = s.heap[p], s.heap[j]
		j = p
	}
}

func (s *successors) down(j int) {
	n := len(s.heap)
	for {
		far := j
		for _, c := range []int{2*j + 1, 2*j + 2} {
			if c < n && s.farther(s.heap[c], s.heap[far]) {
				far = c
			}
		}
		if far == j {
			return
		}
		s.heap[j], s.heap[far] = s.heap[far], s.heap[j]
		j = far
	}
}
