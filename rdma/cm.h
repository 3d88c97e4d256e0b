// The C side of connecting QPs through the RDMA connection manager
// (librdmacm): waiting for an event with a deadline, and moving a QP the
// endpoint created itself to RTR and RTS with the attributes the CM
// negotiated, overridden by the test's own.
#ifndef RDMARUN_CM_H
#define RDMARUN_CM_H

#include <stdint.h>
#include <rdma/rdma_cma.h>
#include "shim.h"

// One CM event, copied out so that it can be acknowledged at once: an
// unacknowledged event blocks rdma_destroy_id of its id.
struct rr_cm_event {
	int event; // enum rdma_cm_event_type
	int status;
	struct rdma_cm_id *id; // for a connect request: the new id
	uint8_t private_data[255];
	uint8_t private_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint32_t qp_num;
	// A UDP id's multicast join: the address of the group's members,
	// its QP number (0xFFFFFF) and Q_Key.
	struct ibv_ah_attr ah_attr;
	uint32_t qkey;
};

// Waits at most timeout_ms for ch's next event and copies it into *out,
// acknowledged. Returns 0, 1 when no event came (the timeout passed or a
// signal cut the wait short), or -errno.
int rr_cm_next(struct rdma_event_channel *ch, int timeout_ms, struct rr_cm_event *out);

// Moves qp, which is in INIT, to RTR and then RTS with the CM's
// attributes for id, except those c sets: timeout, retry_cnt, rnr_retry,
// min_rnr_timer and the read/atomic depths always, the path MTU when
// c->mtu is not 0. Returns 0 or an errno; *stage says which step failed
// (0 reading the CM's attributes, 1 RTR, 2 RTS).
int rr_cm_qp_ready(struct rdma_cm_id *id, struct ibv_qp *qp, const struct rr_conn *c, int *stage);

// The name of id's device and its port, after address resolution or on a
// connect request; "" when the CM has not bound it to one yet.
const char *rr_cm_device(struct rdma_cm_id *id, uint8_t *port);

// Copies the source and destination GIDs the CM resolved for id (16
// bytes each), after address resolution.
void rr_cm_gids(struct rdma_cm_id *id, uint8_t *sgid, uint8_t *dgid);


// Address helpers: ip is 16 bytes, an IPv4 address in its IPv4-mapped
// IPv6 form. They return 0 or an errno.
int rr_cm_resolve_addr(struct rdma_cm_id *id, const uint8_t *src, int has_src, const uint8_t *dst, uint16_t port, int timeout_ms);
int rr_cm_listen(struct rdma_cm_id *id, const uint8_t *ip, uint16_t port, int backlog, int v6only);
int rr_cm_connect(struct rdma_cm_id *id, uint32_t qpn, const struct rr_conn *c, const void *priv, uint8_t priv_len, int accept);

// Multicast (multicast.c): binds a UDP id to src and asks to join group;
// the join ends with a MULTICAST_JOIN or MULTICAST_ERROR event. Returns
// 0 or an errno, *stage saying which call failed (0 bind, 1 join).
int rr_mcast_join(struct rdma_cm_id *id, const uint8_t *src, const uint8_t *group, int *stage);
int rr_mcast_leave(struct rdma_cm_id *id, const uint8_t *group);
// Gives a UD QP in RTS the group's Q_Key, which a receiver must hold.
int rr_mcast_qkey(struct ibv_qp *qp, uint32_t qkey);
// Attaches qp to, or detaches it from, the group of a join's ah_attr.
int rr_mcast_attach(struct ibv_qp *qp, const struct ibv_ah_attr *a, int attach);

#endif
