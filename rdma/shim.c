//go:build linux && cgo && !nordma

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "shim.h"

ssize_t rr_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max)
{
	return ibv_query_gid_table(ctx, entries, max, 0);
}

int rr_query_port(struct ibv_context *ctx, uint8_t port, struct rr_port_info *out)
{
	struct ibv_port_attr pa;
	memset(&pa, 0, sizeof(pa));
	int rc = ibv_query_port(ctx, port, &pa);
	if (rc)
		return rc;
	out->state = pa.state;
	out->phys_state = pa.phys_state;
	out->link_layer = pa.link_layer;
	out->active_mtu = pa.active_mtu;
	out->max_mtu = pa.max_mtu;
	out->lid = pa.lid;
	out->gid_tbl_len = pa.gid_tbl_len;
	return 0;
}

struct ibv_mr *rr_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return ibv_reg_mr(pd, addr, len, access);
}

struct ibv_qp *rr_create_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t sq, uint32_t rq,
			       uint32_t max_inline, uint32_t *got_inline)
{
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 0;
	ia.cap.max_send_wr = sq;
	ia.cap.max_recv_wr = rq;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = max_inline;
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (qp)
		*got_inline = ia.cap.max_inline_data;
	return qp;
}

int rr_qp_to_init(struct ibv_qp *qp, uint8_t port, int access)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = access;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int rr_qp_to_rtr(struct ibv_qp *qp, const struct rr_conn *c)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)c->mtu;
	a.dest_qp_num = c->dest_qpn;
	a.rq_psn = c->rq_psn;
	a.max_dest_rd_atomic = c->max_dest_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	a.ah_attr.dlid = c->dlid;
	a.ah_attr.sl = c->sl;
	a.ah_attr.port_num = c->port;
	if (c->is_global) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, c->dgid, 16);
		a.ah_attr.grh.sgid_index = c->sgid_index;
		a.ah_attr.grh.hop_limit = c->hop_limit;
		a.ah_attr.grh.traffic_class = c->traffic_class;
	}
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int rr_qp_to_rts(struct ibv_qp *qp, const struct rr_conn *c)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->sq_psn;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->max_rd_atomic;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

int rr_qp_to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// How many spins between looks at the clock and the CQs while waiting for
// a byte to change: often enough to notice an error completion within
// microseconds, rarely enough that the look does not add to the latency.
#define RR_SPIN_CHECK 1024

// One thread's view of a latency run. In the threaded run each side has
// its own thread and state, and results go to its own copy of the args;
// rr_write_lat merges them.
struct lat_state {
	struct rr_lat_args *a;
	struct ibv_send_wr wr[2];
	struct ibv_sge sge[2];
	uint32_t outstanding[2];
	int owns[2]; // which sides' CQs this thread reaps
	uint64_t iter;
	volatile int *stop; // set by whichever thread fails first
};

static int fail(struct lat_state *s, int kind, int side)
{
	s->a->fail = kind;
	s->a->fail_side = side;
	s->a->fail_iter = s->iter;
	*s->stop = 1;
	return -1;
}

static int fail_wc(struct lat_state *s, int side, const struct ibv_wc *wc)
{
	s->a->wc_status = wc->status;
	s->a->vendor_err = wc->vendor_err;
	s->a->wc_opcode = wc->opcode;
	s->a->wc_qpn = wc->qp_num;
	return fail(s, RR_FAIL_WC, side);
}

// Reaps whatever completions side has ready, without waiting.
static int reap(struct lat_state *s, int side)
{
	struct ibv_wc wc[8];
	while (s->outstanding[side] > 0) {
		int n = ibv_poll_cq(s->a->cq[side], 8, wc);
		if (n < 0) {
			s->a->err_errno = -n;
			return fail(s, RR_FAIL_POLL, side);
		}
		if (n == 0)
			return 0;
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return fail_wc(s, side, &wc[i]);
		}
		s->outstanding[side] -= n;
	}
	return 0;
}

static int reap_owned(struct lat_state *s)
{
	for (int side = 0; side < 2; side++)
		if (s->owns[side] && reap(s, side))
			return -1;
	return 0;
}

// Checked every RR_SPIN_CHECK spins: the other thread's failure, then the
// stall deadline.
static int should_stop(struct lat_state *s, int side, int waiting, int64_t since)
{
	if (*s->stop)
		return fail(s, RR_FAIL_STOPPED, side);
	if (now_ns() - since <= s->a->stall_ns)
		return 0;
	s->a->stall_waiting = waiting;
	return fail(s, RR_FAIL_STALL, side);
}

// Waits until side has no more than want outstanding completions.
static int reap_until(struct lat_state *s, int side, uint32_t want)
{
	int64_t since = now_ns();
	for (uint32_t spins = 0; s->outstanding[side] > want; spins++) {
		if (reap(s, side))
			return -1;
		if ((spins & (RR_SPIN_CHECK - 1)) == RR_SPIN_CHECK - 1 && should_stop(s, side, 1, since))
			return -1;
	}
	return 0;
}

static int post(struct lat_state *s, int side)
{
	struct ibv_send_wr *bad = NULL;
	if (s->outstanding[side] >= s->a->sq_slots && reap_until(s, side, s->a->sq_slots - 1))
		return -1;
	int rc = ibv_post_send(s->a->qp[side], &s->wr[side], &bad);
	if (rc) {
		s->a->err_errno = rc;
		return fail(s, RR_FAIL_POST, side);
	}
	s->outstanding[side]++;
	return 0;
}

// Spins until the last byte of side's receive buffer reads seq. Every
// RR_SPIN_CHECK spins it reaps this thread's completions, so that an
// error completion ends the wait at once, and checks for a stop.
static int wait_byte(struct lat_state *s, int side, uint8_t seq)
{
	volatile uint8_t *p = s->a->recv_buf[side] + s->a->size - 1;
	int64_t since = 0;
	uint32_t spins = 0;
	while (*p != seq) {
		if ((++spins & (RR_SPIN_CHECK - 1)) != 0)
			continue;
		if (reap_owned(s))
			return -1;
		if (since == 0)
			since = now_ns();
		else if (should_stop(s, side, 0, since))
			return -1;
	}
	// The payload bytes before the last one must not be read ahead of it.
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return 0;
}

static void init_state(struct lat_state *s, struct rr_lat_args *a, volatile int *stop)
{
	memset(s, 0, sizeof(*s));
	s->a = a;
	s->stop = stop;
	for (int i = 0; i < 2; i++) {
		s->sge[i].addr = (uintptr_t)a->send_buf[i];
		s->sge[i].length = a->size;
		s->sge[i].lkey = a->lkey[i];
		s->wr[i].wr_id = (uint64_t)i;
		s->wr[i].sg_list = &s->sge[i];
		s->wr[i].num_sge = 1;
		s->wr[i].opcode = IBV_WR_RDMA_WRITE;
		s->wr[i].send_flags = IBV_SEND_SIGNALED;
		if (a->size <= a->max_inline)
			s->wr[i].send_flags |= IBV_SEND_INLINE;
		s->wr[i].wr.rdma.remote_addr = a->raddr[i];
		s->wr[i].wr.rdma.rkey = a->rkey[i];
	}
}

// Consecutive sequence bytes always differ and are never 0, the value the
// receive buffers start with, so a stale byte is never taken for an
// arrival.
static inline uint8_t next_seq(uint8_t seq)
{
	return (uint8_t)(seq % 255 + 1);
}

// The answering side of the threaded run: wait for each write, answer it.
static void *responder_main(void *arg)
{
	struct lat_state *s = arg;
	struct rr_lat_args *a = s->a;
	uint8_t seq = 0;
	for (uint64_t i = 0; i < a->warmup + a->iters; i++) {
		s->iter = i;
		seq = next_seq(seq);
		if (wait_byte(s, 1, seq))
			return NULL;
		a->send_buf[1][a->size - 1] = seq;
		if (post(s, 1) || reap(s, 1))
			return NULL;
	}
	reap_until(s, 1, 0);
	return NULL;
}

// One timed step of the requester. Single-threaded, it also plays the
// responder: it waits for its own write to land and answers it.
static int requester_step(struct lat_state *s, uint8_t seq, int single)
{
	struct rr_lat_args *a = s->a;
	a->send_buf[0][a->size - 1] = seq;
	if (post(s, 0))
		return -1;
	if (single) {
		if (wait_byte(s, 1, seq))
			return -1;
		a->send_buf[1][a->size - 1] = seq;
		if (post(s, 1))
			return -1;
	}
	return wait_byte(s, 0, seq);
}

int rr_write_lat(struct rr_lat_args *a, uint64_t *samples)
{
	volatile int stop = 0;
	int single = !a->responder_thread;
	struct lat_state req, resp;
	struct rr_lat_args resp_args;
	pthread_t thr;

	a->fail = RR_OK;
	a->done = 0;
	init_state(&req, a, &stop);
	req.owns[0] = 1;
	req.owns[1] = single;
	if (!single) {
		resp_args = *a;
		init_state(&resp, &resp_args, &stop);
		resp.owns[1] = 1;
		int rc = pthread_create(&thr, NULL, responder_main, &resp);
		if (rc) {
			a->err_errno = rc;
			a->fail = RR_FAIL_THREAD;
			return -1;
		}
	}

	uint8_t seq = 0;
	int rc = 0;
	int64_t start = 0;
	for (uint64_t i = 0; i < a->warmup + a->iters; i++) {
		req.iter = i;
		seq = next_seq(seq);
		if (i == a->warmup)
			start = now_ns();
		int64_t t0 = now_ns();
		if (requester_step(&req, seq, single)) {
			rc = -1;
			break;
		}
		if (i >= a->warmup) {
			samples[i - a->warmup] = (uint64_t)(now_ns() - t0);
			a->done = i - a->warmup + 1;
		}
		// Reaping outside the timed part keeps the send queues from
		// filling up, so post never waits inside a round trip.
		if (reap_owned(&req)) {
			rc = -1;
			break;
		}
	}
	if (rc == 0) {
		a->elapsed_ns = now_ns() - start;
		if (reap_until(&req, 0, 0) || (single && reap_until(&req, 1, 0)))
			rc = -1;
	}
	if (!single) {
		pthread_join(thr, NULL);
		// The responder's own failure explains the requester's stall or
		// stop better than the requester can.
		if (resp_args.fail != RR_OK && resp_args.fail != RR_FAIL_STOPPED &&
		    (a->fail == RR_OK || a->fail == RR_FAIL_STOPPED || a->fail == RR_FAIL_STALL)) {
			a->fail = resp_args.fail;
			a->fail_side = resp_args.fail_side;
			a->err_errno = resp_args.err_errno;
			a->wc_status = resp_args.wc_status;
			a->vendor_err = resp_args.vendor_err;
			a->wc_opcode = resp_args.wc_opcode;
			a->wc_qpn = resp_args.wc_qpn;
			a->fail_iter = resp_args.fail_iter;
			a->stall_waiting = resp_args.stall_waiting;
			rc = -1;
		}
	}
	return rc;
}
