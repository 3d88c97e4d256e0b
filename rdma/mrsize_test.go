package rdma

import (
	"os"
	"testing"
)

// TestRegisteredBytes: the bytes an endpoint registers for a test, worked
// out by hand from the layout NewEndpoint builds (two cache-line-aligned
// areas per QP, whole pages).
func TestRegisteredBytes(t *testing.T) {
	page := int64(os.Getpagesize())
	for _, tc := range []struct {
		name string
		spec TestSpec
		want int64
	}{
		{"2 B, 1 QP: one page", TestSpec{Op: OpWrite, Size: 2}, page},
		{"atomic", TestSpec{Op: OpFetchAdd}, page},
		{"areas aligned to 64 B", TestSpec{Op: OpWrite, Size: 65, QPs: 32, Threads: 1}, roundUp(2*128*32, page)},
		{"1 MiB, 8 QPs", TestSpec{Op: OpWrite, Measure: MeasureBandwidth, Size: 1 << 20, QPs: 8}, 16 << 20},
		{"bandwidth default 64 KiB", TestSpec{Op: OpWrite, Measure: MeasureBandwidth}, 128 << 10},
		{"huge pages round to 2 MiB", TestSpec{Op: OpWrite, Size: 4096, Hugepages: true}, 2 << 20},
		{"huge pages, 3 MiB", TestSpec{Op: OpWrite, Size: 3 << 19, Hugepages: true}, 4 << 20},
		{"srq sends: one receive area for 64 QPs", TestSpec{Op: OpSend, Measure: MeasureBandwidth, Size: 4096, QPs: 64, SRQ: true}, 65 * 4096},
		{"no srq: 64 receive areas", TestSpec{Op: OpSend, Measure: MeasureBandwidth, Size: 4096, QPs: 64}, 128 * 4096},
		{"srq write_imm: its writes need each QP's area", TestSpec{Op: OpWriteImm, Measure: MeasureBandwidth, Size: 4096, QPs: 64, SRQ: true}, 128 * 4096},
		{"UD: room for the GRH", TestSpec{Op: OpSend, QPType: UD, Size: 1024, QPs: 4}, roundUp(2*1088*4, page)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			test, err := tc.spec.Complete()
			if err != nil {
				t.Fatal(err)
			}
			cfg := SpecConfig(test, EndpointConfig{Device: "rxe0"})
			if got := cfg.RegisteredBytes(); got != tc.want {
				t.Errorf("RegisteredBytes() = %d, want %d", got, tc.want)
			}
		})
	}
}

func roundUp(n, unit int64) int64 { return (n + unit - 1) / unit * unit }
