//go:build linux && cgo && !nordma

#include <errno.h>
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

struct lat_state {
	struct rr_lat_args *a;
	struct ibv_send_wr wr[2];
	struct ibv_sge sge[2];
	uint32_t outstanding[2];
	uint64_t iter;
};

static int fail_wc(struct lat_state *s, int side, const struct ibv_wc *wc)
{
	struct rr_lat_args *a = s->a;
	a->fail = RR_FAIL_WC;
	a->fail_side = side;
	a->wc_status = wc->status;
	a->vendor_err = wc->vendor_err;
	a->wc_opcode = wc->opcode;
	a->wc_qpn = wc->qp_num;
	a->fail_iter = s->iter;
	return -1;
}

// Reaps whatever completions side has ready, without waiting.
static int reap(struct lat_state *s, int side)
{
	struct ibv_wc wc[8];
	while (s->outstanding[side] > 0) {
		int n = ibv_poll_cq(s->a->cq[side], 8, wc);
		if (n < 0) {
			s->a->fail = RR_FAIL_POLL;
			s->a->fail_side = side;
			s->a->err_errno = -n;
			s->a->fail_iter = s->iter;
			return -1;
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

static int stalled(struct lat_state *s, int side, int waiting, int64_t since)
{
	if (now_ns() - since <= s->a->stall_ns)
		return 0;
	s->a->fail = RR_FAIL_STALL;
	s->a->fail_side = side;
	s->a->stall_waiting = waiting;
	s->a->fail_iter = s->iter;
	return 1;
}

// Waits until side has fewer than want outstanding completions.
static int reap_until(struct lat_state *s, int side, uint32_t want)
{
	int64_t since = now_ns();
	for (uint32_t spins = 0; s->outstanding[side] > want; spins++) {
		if (reap(s, side))
			return -1;
		if ((spins & (RR_SPIN_CHECK - 1)) == RR_SPIN_CHECK - 1 && stalled(s, side, 1, since))
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
		s->a->fail = RR_FAIL_POST;
		s->a->fail_side = side;
		s->a->err_errno = rc;
		s->a->fail_iter = s->iter;
		return -1;
	}
	s->outstanding[side]++;
	return 0;
}

// Spins until the last byte of side's receive buffer reads seq. Every
// RR_SPIN_CHECK spins it reaps both sides' completions, so that an error
// completion ends the wait at once, and checks the stall deadline.
static int wait_byte(struct lat_state *s, int side, uint8_t seq)
{
	volatile uint8_t *p = s->a->recv_buf[side] + s->a->size - 1;
	int64_t since = 0;
	uint32_t spins = 0;
	while (*p != seq) {
		if ((++spins & (RR_SPIN_CHECK - 1)) != 0)
			continue;
		if (reap(s, 0) || reap(s, 1))
			return -1;
		if (since == 0)
			since = now_ns();
		else if (stalled(s, side, 0, since))
			return -1;
	}
	// The payload bytes before the last one must not be read ahead of it.
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return 0;
}

// One round trip: side 0 writes to side 1, which answers with a write.
static int round_trip(struct lat_state *s, uint8_t seq)
{
	struct rr_lat_args *a = s->a;
	a->send_buf[0][a->size - 1] = seq;
	if (post(s, 0))
		return -1;
	if (wait_byte(s, 1, seq))
		return -1;
	a->send_buf[1][a->size - 1] = seq;
	if (post(s, 1))
		return -1;
	return wait_byte(s, 0, seq);
}

int rr_write_lat(struct rr_lat_args *a, uint64_t *samples)
{
	struct lat_state s;
	memset(&s, 0, sizeof(s));
	s.a = a;
	a->fail = RR_OK;
	a->done = 0;
	for (int i = 0; i < 2; i++) {
		s.sge[i].addr = (uintptr_t)a->send_buf[i];
		s.sge[i].length = a->size;
		s.sge[i].lkey = a->lkey[i];
		s.wr[i].wr_id = (uint64_t)i;
		s.wr[i].sg_list = &s.sge[i];
		s.wr[i].num_sge = 1;
		s.wr[i].opcode = IBV_WR_RDMA_WRITE;
		s.wr[i].send_flags = IBV_SEND_SIGNALED;
		if (a->size <= a->max_inline)
			s.wr[i].send_flags |= IBV_SEND_INLINE;
		s.wr[i].wr.rdma.remote_addr = a->raddr[i];
		s.wr[i].wr.rdma.rkey = a->rkey[i];
	}
	// Consecutive sequence bytes always differ and are never 0, the value
	// the receive buffers start with, so a stale byte is never taken for
	// an arrival.
	uint8_t seq = 0;
	for (uint64_t i = 0; i < a->warmup; i++) {
		s.iter = i;
		seq = (uint8_t)(seq % 255 + 1);
		if (round_trip(&s, seq))
			return -1;
		if (reap(&s, 0) || reap(&s, 1))
			return -1;
	}
	int64_t start = now_ns();
	for (uint64_t i = 0; i < a->iters; i++) {
		s.iter = a->warmup + i;
		seq = (uint8_t)(seq % 255 + 1);
		int64_t t0 = now_ns();
		if (round_trip(&s, seq))
			return -1;
		samples[i] = (uint64_t)(now_ns() - t0);
		a->done = i + 1;
		// Reaping outside the timed part keeps the send queues from
		// filling up, so post never waits inside a round trip.
		if (reap(&s, 0) || reap(&s, 1))
			return -1;
	}
	a->elapsed_ns = now_ns() - start;
	if (reap_until(&s, 0, 0) || reap_until(&s, 1, 0))
		return -1;
	return 0;
}
