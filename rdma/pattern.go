package rdma

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// pattern fills b with the bytes side (0 requester, 1 responder) sends on
// QP qp in a run with this seed. Both ends compute it, so the receiving
// side can check what arrived without seeing the sender's memory.
func pattern(b []byte, seed uint64, side, qp int) {
	x := seed ^ uint64(side)<<40 ^ uint64(qp)<<20
	for i := 0; i < len(b); i += 8 {
		// splitmix64: cheap, and no two QPs or sides share a stream.
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], z)
		copy(b[i:], w[:])
	}
}

// areas is what validation needs of an endpoint.
type areas interface {
	sendArea(i int) []byte
	recvArea(i int) []byte
}

// fillBuffers prepares one side's buffers before a run: receive areas
// zeroed (the loops watch their last byte), and with validation the send
// areas, or for reads the receive area the peer reads from, filled with
// the pattern.
func fillBuffers(spec Test, e areas, side int) {
	for i := range spec.QPs {
		s, r := e.sendArea(i)[:spec.Size], e.recvArea(i)[:spec.Size]
		clear(r)
		clear(s)
		switch {
		case spec.Op.Atomic():
		case spec.Op == OpRead:
			if side == 1 || spec.Bidirectional {
				pattern(r, spec.Seed, side, i)
			}
		case spec.Validate:
			pattern(s, spec.Seed, side, i)
		}
	}
}

// checkBuffers compares what arrived at one side with what the other
// side sent. The last byte of a ping-pong message that carries no
// immediate holds its sequence number and is left out.
func checkBuffers(spec Test, e areas, side int, role Role) error {
	n := spec.Size
	if spec.Measure == MeasureLatency && (spec.Op == OpWrite || spec.Op == OpSend || spec.Op == OpSendImm) {
		n--
	}
	want := make([]byte, spec.Size)
	for i := range spec.QPs {
		got := e.recvArea(i)
		switch {
		case spec.Op.Atomic():
			if side != 1 || spec.Duration != 0 || spec.Measure != MeasureLatency {
				continue
			}
			// Each op adds one (fetch_add) or moves the word one on
			// (cmp_swap), so it ends at the number of ops.
			if w, ops := binary.LittleEndian.Uint64(got[:8]), uint64(spec.Warmup+spec.Iterations); w != ops {
				return &ValidationError{Op: spec.Op, QP: i, What: fmt.Sprintf("the target word holds %d after %d operations", w, ops)}
			}
		case spec.Op == OpRead:
			if role&RoleSend == 0 {
				continue
			}
			// A read copies the peer's receive area into this side's
			// send area.
			pattern(want, spec.Seed, 1-side, i)
			if !bytes.Equal(e.sendArea(i)[:n], want[:n]) {
				return &ValidationError{Op: spec.Op, QP: i, What: "the bytes read differ from what the peer holds"}
			}
		default:
			// The responder receives in every run; the requester only
			// the answers of a ping-pong, or in a bidirectional run.
			if side == 0 && spec.Measure != MeasureLatency && !spec.Bidirectional {
				continue
			}
			pattern(want, spec.Seed, 1-side, i)
			if !bytes.Equal(got[:n], want[:n]) {
				return &ValidationError{Op: spec.Op, QP: i, What: "what arrived differs from what the peer sent"}
			}
		}
	}
	return nil
}
