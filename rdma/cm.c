//go:build linux && cgo && !nordma

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "cm.h"

int rr_cm_next(struct rdma_event_channel *ch, int timeout_ms, struct rr_cm_event *out)
{
	// The channel's fd is non-blocking (set when it is made), so a
	// wake-up that another reader beat us to is EAGAIN, not a hang.
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	// A signal (the Go runtime preempts threads with SIGURG) ends the
	// wait early; the caller's loop waits again until its deadline.
	int n = poll(&p, 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 1 : -errno;
	if (n == 0)
		return 1;
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev) != 0)
		return errno == EAGAIN || errno == EINTR ? 1 : -errno;
	memset(out, 0, sizeof(*out));
	out->event = ev->event;
	out->status = ev->status;
	out->id = ev->id;
	if (ev->id && ev->id->ps != RDMA_PS_UDP) {
		const struct rdma_conn_param *c = &ev->param.conn;
		uint8_t len = c->private_data_len;
		if (len > sizeof(out->private_data))
			len = sizeof(out->private_data);
		if (c->private_data && len > 0)
			memcpy(out->private_data, c->private_data, len);
		out->private_len = len;
		out->responder_resources = c->responder_resources;
		out->initiator_depth = c->initiator_depth;
		out->retry_count = c->retry_count;
		out->rnr_retry_count = c->rnr_retry_count;
		out->qp_num = c->qp_num;
	} else if (ev->id) {
		out->ah_attr = ev->param.ud.ah_attr;
		out->qp_num = ev->param.ud.qp_num;
		out->qkey = ev->param.ud.qkey;
	}
	rdma_ack_cm_event(ev);
	return 0;
}

int rr_cm_qp_ready(struct rdma_cm_id *id, struct ibv_qp *qp, const struct rr_conn *c, int *stage)
{
	struct ibv_qp_attr a;
	int mask;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	*stage = 0;
	if (rdma_init_qp_attr(id, &a, &mask) != 0)
		return errno;
	if (c->mtu)
		a.path_mtu = (enum ibv_mtu)c->mtu;
	if (!c->uc) {
		a.max_dest_rd_atomic = c->max_dest_rd_atomic;
		a.min_rnr_timer = c->min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	*stage = 1;
	int rc = ibv_modify_qp(qp, &a, mask);
	if (rc != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	*stage = 0;
	if (rdma_init_qp_attr(id, &a, &mask) != 0)
		return errno;
	if (!c->uc) {
		a.timeout = c->timeout;
		a.retry_cnt = c->retry_cnt;
		a.rnr_retry = c->rnr_retry;
		a.max_rd_atomic = c->max_rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	*stage = 2;
	return ibv_modify_qp(qp, &a, mask);
}

const char *rr_cm_device(struct rdma_cm_id *id, uint8_t *port)
{
	*port = id->port_num;
	if (!id->verbs || !id->verbs->device)
		return "";
	return ibv_get_device_name(id->verbs->device);
}

void rr_cm_gids(struct rdma_cm_id *id, uint8_t *sgid, uint8_t *dgid)
{
	memcpy(sgid, id->route.addr.addr.ibaddr.sgid.raw, 16);
	memcpy(dgid, id->route.addr.addr.ibaddr.dgid.raw, 16);
}

static socklen_t fill(struct sockaddr_storage *ss, const uint8_t *ip, uint16_t port)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	memset(ss, 0, sizeof(*ss));
	if (memcmp(ip, mapped, sizeof(mapped)) == 0) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		memcpy(&a->sin_addr, ip + 12, 4);
		return sizeof(*a);
	}
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
	a->sin6_family = AF_INET6;
	a->sin6_port = htons(port);
	memcpy(&a->sin6_addr, ip, 16);
	return sizeof(*a);
}

int rr_cm_resolve_addr(struct rdma_cm_id *id, const uint8_t *src, int has_src, const uint8_t *dst, uint16_t port, int timeout_ms)
{
	struct sockaddr_storage s, d;
	if (has_src)
		fill(&s, src, 0);
	fill(&d, dst, port);
	if (rdma_resolve_addr(id, has_src ? (struct sockaddr *)&s : NULL, (struct sockaddr *)&d, timeout_ms) != 0)
		return errno;
	return 0;
}

int rr_cm_listen(struct rdma_cm_id *id, const uint8_t *ip, uint16_t port, int backlog, int v6only)
{
	struct sockaddr_storage a;
	fill(&a, ip, port);
	if (v6only && rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v6only, sizeof(v6only)) != 0)
		return errno;
	if (rdma_bind_addr(id, (struct sockaddr *)&a) != 0)
		return errno;
	if (rdma_listen(id, backlog) != 0)
		return errno;
	return 0;
}

int rr_cm_connect(struct rdma_cm_id *id, uint32_t qpn, const struct rr_conn *c, const void *priv, uint8_t priv_len, int accept)
{
	struct rdma_conn_param p;
	memset(&p, 0, sizeof(p));
	p.qp_num = qpn;
	p.private_data = priv;
	p.private_data_len = priv_len;
	p.responder_resources = c->max_dest_rd_atomic;
	p.initiator_depth = c->max_rd_atomic;
	p.retry_count = c->retry_cnt;
	p.rnr_retry_count = c->rnr_retry;
	// siw makes its TCP connection inside rdma_connect, in a blocking
	// kernel connect that a signal ends with ERESTARTSYS: the kernel
	// then closes that socket, half set up, and restarts the call,
	// whose new socket, bound to the same CM port, finds the first
	// one's 4-tuple still held and fails EADDRNOTAVAIL. The Go runtime
	// preempts with SIGURG, which can land on this thread: in the
	// testbed 2 of 18 runs of TestSiwMatrix (54 connects each) failed
	// so, a TIME_WAIT socket on the failed QP's own port left behind.
	// Blocked here, a signal waits for the call to return: 0 of 40.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = accept ? rdma_accept(id, &p) : rdma_connect(id, &p);
	int err = rc != 0 ? errno : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
