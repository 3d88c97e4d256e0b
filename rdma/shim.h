// The C side of the verbs core: helpers for what cgo cannot call directly
// (verbs.h macros and inline functions) and the measured loops, which must
// run without crossing back into Go.
#ifndef RDMARUN_SHIM_H
#define RDMARUN_SHIM_H

#include <pthread.h>
#include <stddef.h>
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
	uint8_t uc; // unreliable connected: no ACK timers, no reads or atomics
};

// Transports; rr_create_qp takes one.
enum rr_qpt { RR_QPT_RC, RR_QPT_UC, RR_QPT_UD };

// A UD receive starts with the 40 bytes of the packet's global route
// header (on RoCE, always; on InfiniBand, room for one), before the data.
#define RR_GRH_BYTES 40

// Operations, measures and roles; the Go side mirrors these numbers, and
// enums_linux.go does not compile if it stops doing so.
enum rr_op { RR_SEND, RR_SEND_IMM, RR_WRITE, RR_WRITE_IMM, RR_READ, RR_FETCH_ADD, RR_CMP_SWAP };
enum rr_measure { RR_LATENCY, RR_BANDWIDTH };
enum rr_role {
	RR_ROLE_SEND = 1, // posts the operation
	RR_ROLE_RECV = 2, // answers ping-pongs, or keeps receives posted
};

// Why a run stopped early.
enum rr_fail {
	RR_OK = 0,
	RR_FAIL_POST = 1,     // ibv_post_send/recv failed; err_errno
	RR_FAIL_POLL = 2,     // ibv_poll_cq failed
	RR_FAIL_WC = 3,       // a completion came back with an error status
	RR_FAIL_STALL = 4,    // nothing happened within stall_ns
	RR_FAIL_STOPPED = 5,  // another worker failed first
	RR_FAIL_THREAD = 6,   // a worker thread could not start; err_errno
	RR_FAIL_EVENT = 7,    // arming or reading the completion channel failed; err_errno
	RR_FAIL_VALIDATE = 8, // data came back different from what was sent
};

// What a worker waited for when it stalled.
enum rr_wait { RR_WAIT_PEER_DATA, RR_WAIT_SEND_COMP, RR_WAIT_RECV_COMP };

// Latency histogram: values below 2048 ns have their own bucket; above,
// 1024 buckets per power of two, so every value is kept to within 0.1%
// (three significant digits) up to 2^40 ns.
#define RR_HIST_SUB 1024
#define RR_HIST_MAX_SHIFT 30
#define RR_HIST_BUCKETS (2 * RR_HIST_SUB + RR_HIST_MAX_SHIFT * RR_HIST_SUB)

// The bucket that counts v ns; Go reads the histogram with the same map.
uint32_t rr_hist_index(uint64_t v);

// Round trips a latency requester keeps in ticks before it moves them
// into the histogram, between two round trips.
#define RR_SAMPLE_BATCH 4096

// One QP as a worker sees it.
struct rr_qp_io {
	struct ibv_qp *qp;
	struct ibv_cq *cq;  // send completions of this QP, and its receives but with an SRQ
	struct ibv_cq *rcq; // receive completions: cq, or the thread's shared receive CQ
	uint8_t *sbuf;     // send area (also the local target of reads and atomics)
	uint8_t *rbuf;     // receive area: where the peer's writes and sends land
	uint32_t lkey;
	uint64_t raddr; // the peer QP's receive area
	uint32_t rkey;
	// UD: the address handle of the peer QP, its number and Q_Key.
	struct ibv_ah *ah;
	uint32_t remote_qpn;
	uint32_t remote_qkey;

	// Run state and results.
	uint64_t posted, completed; // send WRs
	uint64_t received;          // receive completions
	uint64_t recv_posted; // starts at the receives an earlier run left posted
	int64_t t_first_post, t_last_comp, t_first_recv, t_last_recv;
	uint64_t atomic_next; // the value the remote word should hold next
	uint8_t seq;          // ping-pong sequence byte of this QP
	// UD latency: the sequence byte of the last message received, whether
	// one carried seq since the last request (matched), and the round
	// trips that got no answer within lost_ns (timed_out) and the answers
	// that came after that (late).
	uint8_t rseq;
	int matched;
	uint64_t timed_out, late;
	struct ibv_send_wr *wrs; // post_list WRs, chained; filled by the worker
	struct ibv_sge *sges;
};

struct rr_run;

// One thread and the QPs it drives.
struct rr_worker {
	struct rr_run *run;
	struct rr_qp_io *q;
	int nq;
	// by_qpn finds the QP of a completion on a shared receive CQ: an
	// open-addressing table of qpn_mask + 1 slots (at least twice nq),
	// keyed by QP number, probed linearly; NULL without a shared CQ.
	struct rr_qp_io **by_qpn;
	uint32_t qpn_mask;
	int role; // RR_ROLE_* bits
	int side; // 0: requester side, 1: responder side (for error messages)
	struct ibv_comp_channel *ch; // NULL: busy-poll
	int cpu;                     // pin to this CPU, or -1
	uint64_t *hist;              // RR_HIST_BUCKETS counters, or NULL
	uint64_t *samples;           // RR_SAMPLE_BATCH round trips in ticks, with hist
	uint32_t nsamples;
	// The clock of this worker's timing (loop.c): the TSC, with tick_mult
	// ns per cycle times 2^32, or CLOCK_MONOTONIC ns (tick_mult 2^32).
	int tsc;
	uint64_t tick_mult;
	pthread_t thr;
	int started;

	// Latency results (exact; percentiles come from hist).
	uint64_t n, sum, min, max;
	double sumsq; // exact enough: 53 bits hold 10^7 samples of 10^4 us squared
	uint64_t events; // completion events consumed (event mode)
	int64_t t_begin, t_end; // measured part of this worker

	// Failure.
	int fail;
	int err_errno;
	int wc_status;
	uint32_t vendor_err;
	int wc_opcode;
	uint32_t wc_qpn;
	uint64_t fail_iter;
	int waiting; // enum rr_wait
	uint64_t iter;

	// The current wait for a completion (loop.c, over): when it began,
	// the port's receive count seen in its window, and how often the
	// port's own progress extended it. stall_waited_ns is what a stalled
	// wait lasted.
	uint64_t wait_begin;
	uint64_t rx_seen;
	int rx_armed;
	uint32_t stall_extended;
	int64_t stall_waited_ns;

	// UD: the requester ended its round trips early because no answer
	// had come for stall_ns (silent); a receiver's drain began at drain_since
	// (ticks; 0: not yet), once the peer's senders were done.
	int silent;
	uint64_t drain_since;
	uint64_t srq_posted;
};

struct rr_run {
	int op;
	int measure;
	uint32_t size;
	uint32_t max_inline;
	uint32_t tx_depth;
	uint32_t rx_depth;
	uint32_t recv_len; // every receive takes the whole receive area, so one
	                   // left from a run with smaller messages still fits
	uint32_t cq_mod;
	uint32_t post_list;
	uint64_t warmup;
	uint64_t iters;      // per QP; 0 with duration_ns
	int64_t duration_ns; // 0: run iters
	// A wait fails once nothing completed and the port received nothing
	// for stall_ns, or nothing completed for stall_cap_ns however busy
	// the port. port_rx_fd is the sysfs file of the port's received
	// packets (-1: none, and stall_ns alone decides).
	int64_t stall_ns;
	int64_t stall_cap_ns;
	int port_rx_fd;
	// UD (ud set): a message or an answer that has not arrived lost_ns
	// after it could have is counted lost, and the run moves on; grh is
	// the bytes before a receive's data (RR_GRH_BYTES).
	int ud;
	uint32_t grh;
	int64_t lost_ns;
	// The side's shared receive queue (NULL: each QP has its own), the
	// receives it holds at most, and those an earlier run left in it.
	// srq_prefilled counts what rr_prepare posted; each worker's
	// srq_posted what it gave back since.
	struct ibv_srq *srq;
	uint32_t srq_depth;
	uint64_t srq_left;
	uint64_t srq_prefilled;

	volatile int stop;      // set by a failing worker, or by Go to end a run early
	volatile int peer_done; // set by Go: every sender on the other side has finished
	int notify_fd;          // eventfd written when every sender of this run has finished, or -1
	int wake_fd;            // eventfd written with stop and peer_done, so event-mode waits see them at once, or -1
	int nsenders;           // workers of this run with RR_ROLE_SEND
	int finished_senders;
	int arrived; // barrier
	struct rr_worker *w;
	int nw;
	int64_t t_start;
	int done_rc; // rr_run_workers' return, for a run on an rr_runner
};

ssize_t rr_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max);
int rr_query_port(struct ibv_context *ctx, uint8_t port, struct rr_port_info *out);
struct ibv_mr *rr_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access);
// cq takes the QP's send completions and rcq its receives (the same CQ
// but with a shared receive queue).
struct ibv_qp *rr_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_cq *rcq, struct ibv_srq *srq, int qpt,
			    uint32_t sq, uint32_t rq, uint32_t max_inline, uint32_t *got_inline);
// A shared receive queue of depth receives (NULL with errno set), and its
// limit armed: the device raises IBV_EVENT_SRQ_LIMIT_REACHED once fewer
// than limit receives remain.
struct ibv_srq *rr_create_srq(struct ibv_pd *pd, uint32_t depth);
int rr_arm_srq_limit(struct ibv_srq *srq, uint32_t limit);
// Reads the context's pending async events without blocking, counting
// the SRQ limit events; returns how many events it read, or -errno.
int rr_drain_async(struct ibv_context *ctx, uint32_t *srq_limit);
// A connected QP goes to INIT with its access flags; a UD QP (qkey not
// 0) with its Q_Key instead, and then to RTR and RTS with no peer: the
// peer is named per send, by an address handle (rr_create_ah).
int rr_qp_to_init(struct ibv_qp *qp, uint8_t port, int access, uint32_t qkey);
int rr_ud_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn);
// The address handle of c's destination (dlid, dgid, port, sgid_index,
// sl, hop_limit, traffic_class); NULL with errno set on failure.
struct ibv_ah *rr_create_ah(struct ibv_pd *pd, const struct rr_conn *c);
int rr_qp_to_rtr(struct ibv_qp *qp, const struct rr_conn *c);
int rr_qp_to_rts(struct ibv_qp *qp, const struct rr_conn *c);
int rr_qp_to_err(struct ibv_qp *qp);
// Reads back the attributes the driver holds for a connected QP (path
// MTU, timers, retries, address vector) into c; returns 0 or an errno.
int rr_qp_query(struct ibv_qp *qp, struct rr_conn *c);
// Posts n receives of buf to srq, or to qp's own queue when srq is NULL.
int rr_post_recvs(struct ibv_qp *qp, struct ibv_srq *srq, uint8_t *buf, uint32_t len, uint32_t lkey, uint32_t n);

// Fills the WR templates and posts the initial receives: everything that
// must happen before the peer is told to start.
int rr_prepare(struct rr_run *r);

// Runs every worker of r in its own thread, from one barrier, and waits
// for all of them. Returns 0, or -1 with the first worker's failure set.
int rr_run_workers(struct rr_run *r);
// A thread that runs one run's workers at a time (rr_run_workers), parked
// between runs: an endpoint keeps one for its runs. After each run it sets
// the run's done_rc and then writes done_fd, after which it no longer
// touches the run. rr_runner_open returns NULL with *err set when the
// thread cannot start; rr_runner_close joins it, after the last run.
struct rr_runner;
struct rr_runner *rr_runner_open(int done_fd, int *err);
void rr_runner_submit(struct rr_runner *t, struct rr_run *r);
void rr_runner_close(struct rr_runner *t);
void rr_request_stop(struct rr_run *r);
void rr_peer_done(struct rr_run *r);
int64_t rr_now_ns(void);
// The clock the latency loops time round trips with, calibrated on first
// use: returns 1 for the TSC, 0 for CLOCK_MONOTONIC, and sets *tick_mult
// to nanoseconds per tick times 2^32. rr_latency_ticks reads it.
int rr_latency_clock(uint64_t *tick_mult);
uint64_t rr_latency_ticks(void);

#endif
