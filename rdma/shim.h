// The C side of the verbs core: helpers for what cgo cannot call directly
// (verbs.h macros and inline functions) and the measured loops, which must
// run without crossing back into Go.
#ifndef RDMARUN_SHIM_H
#define RDMARUN_SHIM_H

#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

struct rr_port_info {
	int state;
	int phys_state;
	int link_layer;
	int active_mtu;
	int max_mtu;
	uint16_t lid;
	int gid_tbl_len;
};

// Everything a QP needs to reach RTR and RTS towards one remote QP.
struct rr_conn {
	uint32_t dest_qpn;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint8_t dgid[16];
	uint16_t dlid;
	uint8_t port;
	uint8_t mtu; // enum ibv_mtu
	uint8_t is_global;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
};

// Why a measured loop stopped early.
enum rr_fail {
	RR_OK = 0,
	RR_FAIL_POST = 1,  // ibv_post_send failed; err_errno holds its errno
	RR_FAIL_POLL = 2,  // ibv_poll_cq failed
	RR_FAIL_WC = 3,    // a completion came back with an error status
	RR_FAIL_STALL = 4, // nothing arrived within stall_ns
	RR_FAIL_STOPPED = 5, // the other thread failed first
	RR_FAIL_THREAD = 6,  // the responder thread could not start; err_errno
};

// The arguments and results of rr_write_lat. Side 0 is the requester
// whose round trips are timed; side 1 answers each write with a write.
struct rr_lat_args {
	struct ibv_qp *qp[2];
	struct ibv_cq *cq[2];
	uint8_t *send_buf[2]; // what side i writes from
	uint8_t *recv_buf[2]; // where side i's peer writes to
	uint32_t lkey[2];
	uint64_t raddr[2]; // remote address side i writes to
	uint32_t rkey[2];
	uint32_t size;
	uint32_t max_inline; // post inline when size <= max_inline
	uint32_t sq_slots;   // signaled WRs a side may have outstanding
	uint64_t warmup;
	uint64_t iters;
	int64_t stall_ns;
	int responder_thread; // answer from a second thread, as a remote peer would

	// Results.
	uint64_t done;       // measured iterations completed
	int64_t elapsed_ns;  // wall time of the measured part
	int fail;            // enum rr_fail
	int fail_side;
	int err_errno;
	int wc_status;
	uint32_t vendor_err;
	int wc_opcode;
	uint32_t wc_qpn;
	uint64_t fail_iter;
	int stall_waiting;   // 0: the peer's write, 1: our own completions
};

ssize_t rr_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max);
int rr_query_port(struct ibv_context *ctx, uint8_t port, struct rr_port_info *out);
struct ibv_mr *rr_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access);
struct ibv_qp *rr_create_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t sq, uint32_t rq,
			       uint32_t max_inline, uint32_t *got_inline);
int rr_qp_to_init(struct ibv_qp *qp, uint8_t port, int access);
int rr_qp_to_rtr(struct ibv_qp *qp, const struct rr_conn *c);
int rr_qp_to_rts(struct ibv_qp *qp, const struct rr_conn *c);
int rr_qp_to_err(struct ibv_qp *qp);
int rr_write_lat(struct rr_lat_args *a, uint64_t *samples);

#endif
