//go:build linux && cgo && !nordma

#include <unistd.h>
#include <rdma/siw-abi.h>

#include "siw.h"

// siw gives every queue it maps into user space (a CQ, a QP's send and
// receive queues) an mmap key that is the page offset of its entry in the
// context's table, lowest free entry first. libsiw reads the key
// SIW_INVAL_UOBJ_KEY as "the kernel could not map it" and fails the
// create with no errno, but that key is also the offset of a real entry:
// the 145th with 4 KiB pages. So a context can hold 144 mappings, 48 QPs
// with a CQ each, and the next create fails whatever the limits say. A CQ
// spanning that page, made first in a fresh context (its entry starts at
// offset 0), keeps the page taken for the context's life; it costs about
// 1 MiB of the kernel's memory and is never polled.
struct ibv_cq *rr_siw_plug_cq(struct ibv_context *ctx)
{
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		page = 4096;
	size_t span = ((size_t)SIW_INVAL_UOBJ_KEY / (size_t)page + 1) * (size_t)page;
	int cqes = (int)(span / sizeof(struct siw_cqe)) + 1;
	return ibv_create_cq(ctx, cqes, NULL, NULL, 0);
}
