//go:build linux && cgo && !nordma

#include <errno.h>
#include <string.h>

#include "cm.h"

// fill's twin in cm.c is static there; a group has no port.
static socklen_t group_addr(struct sockaddr_storage *ss, const uint8_t *ip)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	memset(ss, 0, sizeof(*ss));
	if (memcmp(ip, mapped, sizeof(mapped)) == 0) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		memcpy(&a->sin_addr, ip + 12, 4);
		return sizeof(*a);
	}
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
	a->sin6_family = AF_INET6;
	memcpy(&a->sin6_addr, ip, 16);
	return sizeof(*a);
}

int rr_mcast_join(struct rdma_cm_id *id, const uint8_t *src, const uint8_t *group, int *stage)
{
	struct sockaddr_storage s, g;
	group_addr(&s, src);
	group_addr(&g, group);
	*stage = 0;
	if (rdma_bind_addr(id, (struct sockaddr *)&s) != 0)
		return errno;
	*stage = 1;
	if (rdma_join_multicast(id, (struct sockaddr *)&g, NULL) != 0)
		return errno;
	return 0;
}

int rr_mcast_leave(struct rdma_cm_id *id, const uint8_t *group)
{
	struct sockaddr_storage g;
	group_addr(&g, group);
	return rdma_leave_multicast(id, (struct sockaddr *)&g) != 0 ? errno : 0;
}

int rr_mcast_qkey(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.qkey = qkey;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_QKEY);
}

int rr_mcast_attach(struct ibv_qp *qp, const struct ibv_ah_attr *a, int attach)
{
	union ibv_gid gid = a->grh.dgid;
	return attach ? ibv_attach_mcast(qp, &gid, a->dlid) : ibv_detach_mcast(qp, &gid, a->dlid);
}
