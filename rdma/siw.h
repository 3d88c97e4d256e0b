#ifndef RDMARUN_SIW_H
#define RDMARUN_SIW_H

#include <infiniband/verbs.h>

// The vendor id the soft-iWARP driver gives its devices ("bmt"); the
// kernel defines it in the driver, not in its user-space ABI header.
#define RR_SIW_VENDOR_ID 0x626d74

struct ibv_cq *rr_siw_plug_cq(struct ibv_context *ctx);

#endif
