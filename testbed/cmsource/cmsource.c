// cmsource.so: preloaded into perftest's -R clients by make compare.
//
// perftest 4.5-0.17 (Debian 12's) resolves its CM address with no source,
// so the kernel routes to the server's own address locally and the
// client's QPs land on the server's device: a device loopback, not the
// link under test, whatever -d says (measured in the testbed: 0-1 packets
// on the client's veth per 1,000 iterations). Later perftest binds to an
// address of the -d device instead; this gives 0.17 the same source, the
// one rdmarun resolves from, taken from RR_CM_SOURCE. A resolve that
// names its own source is left alone.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct rdma_cm_id;

typedef int (*resolve_fn)(struct rdma_cm_id *, struct sockaddr *, struct sockaddr *, int);

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int timeout_ms)
{
	resolve_fn next = (resolve_fn)dlsym(RTLD_NEXT, "rdma_resolve_addr");
	const char *want = getenv("RR_CM_SOURCE");
	struct sockaddr_storage s;

	if (next == NULL) {
		errno = ENOSYS;
		return -1;
	}
	if (src != NULL || want == NULL || *want == '\0')
		return next(id, src, dst, timeout_ms);
	memset(&s, 0, sizeof(s));
	if (inet_pton(AF_INET, want, &((struct sockaddr_in *)&s)->sin_addr) == 1) {
		s.ss_family = AF_INET;
	} else if (inet_pton(AF_INET6, want, &((struct sockaddr_in6 *)&s)->sin6_addr) == 1) {
		s.ss_family = AF_INET6;
	} else {
		errno = EINVAL;
		return -1;
	}
	return next(id, (struct sockaddr *)&s, dst, timeout_ms);
}
