//go:build linux && cgo && !nordma

#include <errno.h>
#include <fcntl.h>
#include <string.h>

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

struct ibv_qp *rr_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_cq *rcq, struct ibv_srq *srq, int qpt,
			    uint32_t sq, uint32_t rq, uint32_t max_inline, uint32_t *got_inline)
{
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = rcq;
	ia.qp_type = qpt == RR_QPT_UD ? IBV_QPT_UD : qpt == RR_QPT_UC ? IBV_QPT_UC : IBV_QPT_RC;
	ia.sq_sig_all = 0;
	ia.cap.max_send_wr = sq;
	ia.cap.max_recv_wr = srq ? 0 : rq;
	ia.srq = srq;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = max_inline;
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (qp)
		*got_inline = ia.cap.max_inline_data;
	return qp;
}

int rr_qp_to_init(struct ibv_qp *qp, uint8_t port, int access, uint32_t qkey)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (qkey) {
		a.qkey = qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int rr_ud_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (rc)
		return rc;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

struct ibv_ah *rr_create_ah(struct ibv_pd *pd, const struct rr_conn *c)
{
	struct ibv_ah_attr a;
	memset(&a, 0, sizeof(a));
	a.dlid = c->dlid;
	a.sl = c->sl;
	a.port_num = c->port;
	if (c->is_global) {
		a.is_global = 1;
		memcpy(a.grh.dgid.raw, c->dgid, 16);
		a.grh.sgid_index = c->sgid_index;
		a.grh.hop_limit = c->hop_limit;
		a.grh.traffic_class = c->traffic_class;
	}
	return ibv_create_ah(pd, &a);
}

int rr_qp_to_rtr(struct ibv_qp *qp, const struct rr_conn *c)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)c->mtu;
	a.dest_qp_num = c->dest_qpn;
	a.rq_psn = c->rq_psn;
	if (!c->uc) {
		a.max_dest_rd_atomic = c->max_dest_rd_atomic;
		a.min_rnr_timer = c->min_rnr_timer;
	}
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
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (!c->uc)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return ibv_modify_qp(qp, &a, mask);
}

int rr_qp_to_rts(struct ibv_qp *qp, const struct rr_conn *c)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->sq_psn;
	if (c->uc)
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
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

int rr_qp_query(struct ibv_qp *qp, struct rr_conn *c)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	memset(&a, 0, sizeof(a));
	memset(&init, 0, sizeof(init));
	int rc = ibv_query_qp(qp, &a,
			      IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER |
				      IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_AV,
			      &init);
	if (rc)
		return rc;
	c->mtu = a.path_mtu;
	c->timeout = a.timeout;
	c->retry_cnt = a.retry_cnt;
	c->rnr_retry = a.rnr_retry;
	c->min_rnr_timer = a.min_rnr_timer;
	c->max_rd_atomic = a.max_rd_atomic;
	c->sl = a.ah_attr.sl;
	c->traffic_class = a.ah_attr.grh.traffic_class;
	c->hop_limit = a.ah_attr.grh.hop_limit;
	return 0;
}

struct ibv_srq *rr_create_srq(struct ibv_pd *pd, uint32_t depth)
{
	struct ibv_srq_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = depth;
	ia.attr.max_sge = 1;
	return ibv_create_srq(pd, &ia);
}

int rr_arm_srq_limit(struct ibv_srq *srq, uint32_t limit)
{
	struct ibv_srq_attr a;
	memset(&a, 0, sizeof(a));
	a.srq_limit = limit;
	return ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT);
}

int rr_drain_async(struct ibv_context *ctx, uint32_t *srq_limit)
{
	int fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	int n = 0;
	struct ibv_async_event ev;
	while (ibv_get_async_event(ctx, &ev) == 0) {
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
			(*srq_limit)++;
		ibv_ack_async_event(&ev);
		n++;
	}
	return errno == EAGAIN || errno == EWOULDBLOCK ? n : -errno;
}

int rr_post_recvs(struct ibv_qp *qp, struct ibv_srq *srq, uint8_t *buf, uint32_t len, uint32_t lkey, uint32_t n)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = lkey};
	struct ibv_recv_wr wr = {.wr_id = 0, .sg_list = &sge, .num_sge = 1}, *bad;
	for (uint32_t i = 0; i < n; i++) {
		int rc = srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad);
		if (rc)
			return rc;
	}
	return 0;
}
