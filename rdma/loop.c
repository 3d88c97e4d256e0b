//go:build linux && cgo && !nordma

// The measured loops. Each worker thread drives its QPs from a barrier to
// the end of the run without returning to Go, allocating, or taking a
// lock; everything it needs was prepared before the barrier.

#ifndef _GNU_SOURCE
#define _GNU_SOURCE // pthread_setaffinity_np, CPU_SET
#endif
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define RR_HAVE_TSC 1
#else
#define RR_HAVE_TSC 0
#endif

// Spins between looks at the clock and the stop flag while waiting:
// often enough to notice a failure or a stall within microseconds, rarely
// enough that looking does not add to the latency.
#define SPIN_CHECK 1024

// Event mode sleeps in slices this long, so a stop request is seen soon.
#define EVENT_SLICE_MS 100

enum { WANT_SEND, WANT_RECV };
enum { DONE = 1 }; // returned by responder waits when the peer's senders finished
enum { LOST = 2 }; // returned by a UD round trip whose answer did not come within lost_ns

int64_t rr_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// The latency loops time each round trip with the cycle counter where it
// can be trusted, as perftest does. Everything a requester does between
// seeing the reply and posting the next request adds to the round trip,
// and two CLOCK_MONOTONIC reads there cost 0.15 us each in a hot loop
// under emulation and 0.4-1.5 us (medians) right after the post syscall,
// against 0.015 us for rdtsc. Ticks are TSC cycles, or CLOCK_MONOTONIC
// nanoseconds where the TSC cannot be trusted; ticks_ns converts either.
static struct {
	int tsc;       // ticks are TSC cycles; otherwise CLOCK_MONOTONIC ns
	uint64_t mult; // ns per tick, times 2^32
} clk = {.mult = 1ull << 32};
static pthread_once_t clk_once = PTHREAD_ONCE_INIT;

// A worker reads the clock through its own copy of the calibration, taken
// when it starts, so that a recalibration by another run cannot mix two
// clocks in one sample.
static inline uint64_t ticks(const struct rr_worker *w)
{
#if RR_HAVE_TSC
	if (w->tsc)
		return __rdtsc();
#endif
	(void)w;
	return (uint64_t)rr_now_ns();
}

static inline uint64_t ticks_ns(const struct rr_worker *w, uint64_t t)
{
	return (uint64_t)(((unsigned __int128)t * w->tick_mult) >> 32);
}

#if RR_HAVE_TSC
// The TSC counts at one rate whatever the core's frequency or sleep
// state (invariant TSC, CPUID 0x80000007 EDX bit 8), and the kernel
// trusts it across CPUs when its clock source is the TSC: a thread that
// migrates between its two readings still measures right.
static int tsc_trusted(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return 0;
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (!f)
		return 1; // no sysfs (a container may hide it): the CPU's word stands
	char src[32] = "";
	int ok = fgets(src, sizeof(src), f) && strncmp(src, "tsc", 3) == 0 && (src[3] == '\n' || src[3] == 0);
	fclose(f);
	return ok;
}

// A TSC reading and the CLOCK_MONOTONIC time it was taken at: the tightest
// of a few brackets, so a preemption between the reads does not skew it.
static void tsc_pair(int64_t *ns, uint64_t *tsc)
{
	int64_t best = INT64_MAX;
	for (int i = 0; i < 5; i++) {
		int64_t a = rr_now_ns();
		uint64_t t = __rdtsc();
		int64_t b = rr_now_ns();
		if (b - a < best) {
			best = b - a;
			*ns = a + (b - a) / 2;
			*tsc = t;
		}
	}
}
#endif

// Calibrates the TSC against CLOCK_MONOTONIC over CLK_CALIBRATE_NS, once
// per process: an error of 0.2 us at each end is 0.01% of it, well inside
// the histogram's 0.1%. RDMARUN_LATENCY_CLOCK=monotonic keeps the clock
// (to compare the two, or where the TSC misleads without saying so).
#define CLK_CALIBRATE_NS 4000000
static void clk_setup(void)
{
#if RR_HAVE_TSC
	const char *want = getenv("RDMARUN_LATENCY_CLOCK");
	if ((want && strcmp(want, "monotonic") == 0) || !tsc_trusted())
		return;
	int64_t n0 = 0, n1 = 0;
	uint64_t t0 = 0, t1 = 0;
	tsc_pair(&n0, &t0);
	while (rr_now_ns() - n0 < CLK_CALIBRATE_NS)
		;
	tsc_pair(&n1, &t1);
	if (t1 <= t0 || n1 <= n0)
		return;
	double mult = (double)(n1 - n0) / (double)(t1 - t0) * 4294967296.0;
	// Outside 10 MHz to 100 GHz the reading is broken, not the CPU exotic.
	if (mult < 4294967296.0 / 100 || mult > 4294967296.0 * 100)
		return;
	clk.mult = (uint64_t)(mult + 0.5);
	clk.tsc = 1;
#endif
}

// Gives w the process's clock, calibrating it on first use.
static void clk_take(struct rr_worker *w)
{
	pthread_once(&clk_once, clk_setup);
	w->tsc = __atomic_load_n(&clk.tsc, __ATOMIC_RELAXED);
	w->tick_mult = __atomic_load_n(&clk.mult, __ATOMIC_RELAXED);
}

int rr_latency_clock(uint64_t *tick_mult)
{
	struct rr_worker w = {0};
	clk_take(&w);
	*tick_mult = w.tick_mult;
	return w.tsc;
}

uint64_t rr_latency_ticks(void)
{
	struct rr_worker w = {0};
	clk_take(&w);
	return ticks(&w);
}

// Checks the calibration against a run's own span, measured on both
// clocks: a TSC that drifted from CLOCK_MONOTONIC by more than the
// histogram's precision is not used again in this process. Spans too
// short to tell are ignored.
static void clk_check(const struct rr_worker *w, int64_t span_ns, uint64_t span_ticks)
{
	if (!w->tsc || span_ns < 50 * CLK_CALIBRATE_NS)
		return;
	int64_t diff = (int64_t)ticks_ns(w, span_ticks) - span_ns;
	if (diff < 0)
		diff = -diff;
	if (diff * 1000 > span_ns) {
		__atomic_store_n(&clk.tsc, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&clk.mult, 1ull << 32, __ATOMIC_RELAXED);
	}
}

// Wakes the workers blocked on a completion channel (block), which
// would otherwise see stop or peer_done only when their poll slice ends:
// up to EVENT_SLICE_MS added to every event-mode run.
static void wake(struct rr_run *r)
{
	if (r->wake_fd >= 0) {
		uint64_t one = 1;
		ssize_t n = write(r->wake_fd, &one, sizeof(one));
		(void)n; // a full eventfd is already readable: nothing to do
	}
}

void rr_request_stop(struct rr_run *r)
{
	r->stop = 1;
	wake(r);
}

void rr_peer_done(struct rr_run *r)
{
	r->peer_done = 1;
	wake(r);
}

static int wfail(struct rr_worker *w, int kind)
{
	if (w->fail == RR_OK) {
		w->fail = kind;
		w->fail_iter = w->iter;
	}
	w->run->stop = 1;
	return -1;
}

uint32_t rr_hist_index(uint64_t v)
{
	if (v < 2 * RR_HIST_SUB)
		return (uint32_t)v;
	int shift = (63 - __builtin_clzll(v)) - 10; // v >> shift is in [1024, 2048)
	if (shift > RR_HIST_MAX_SHIFT)
		return RR_HIST_BUCKETS - 1;
	return 2 * RR_HIST_SUB + (uint32_t)(shift - 1) * RR_HIST_SUB + (uint32_t)((v >> shift) - RR_HIST_SUB);
}

static void hist_record(struct rr_worker *w, uint64_t v)
{
	w->n++;
	w->sum += v;
	w->sumsq += (double)v * (double)v;
	if (v < w->min)
		w->min = v;
	if (v > w->max)
		w->max = v;
	w->hist[rr_hist_index(v)]++;
}

// Reads the port's received-packet count into *v; 0 when it cannot.
// pread at offset 0 re-reads a sysfs attribute without reopening it.
static int port_rx(const struct rr_run *r, uint64_t *v)
{
	char buf[32];
	ssize_t n = pread(r->port_rx_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *end;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return end != buf && errno == 0;
}

// Decides whether the wait whose current window began at *since (0: the
// wait begins now) has stalled, and sets *left_ns to the rest of the
// window. A slow link is not a dead one: with CQ moderation and large
// messages the next completion may be hundreds of MiB away, so a window
// that ends with the port's receive count moved (ACKs, read responses or
// data are arriving) opens another, up to stall_cap_ns for the whole
// wait. The count is read at most twice per window, half way and at its
// end, so a wait that ends in time never reads it.
static int over(struct rr_worker *w, uint64_t now, uint64_t *since, int64_t *left_ns)
{
	struct rr_run *r = w->run;
	if (*since == 0) {
		*since = now;
		w->wait_begin = now;
		w->rx_armed = 0;
		w->stall_extended = 0;
	}
	int64_t window = (int64_t)ticks_ns(w, now - *since);
	if (r->port_rx_fd >= 0 && !w->rx_armed && window >= r->stall_ns / 2)
		w->rx_armed = port_rx(r, &w->rx_seen);
	if (window < r->stall_ns) {
		*left_ns = r->stall_ns - window;
		return 0;
	}
	int64_t total = (int64_t)ticks_ns(w, now - w->wait_begin);
	uint64_t v;
	if (w->rx_armed && total < r->stall_cap_ns && port_rx(r, &v) && v != w->rx_seen) {
		w->rx_seen = v; // the next window's baseline
		w->stall_extended++;
		*since = now;
		*left_ns = r->stall_ns;
		return 0;
	}
	w->stall_waited_ns = total;
	*left_ns = 0;
	return 1;
}

// Called every SPIN_CHECK spins of a busy wait.
static int check(struct rr_worker *w, uint64_t *since, int waiting)
{
	if (w->run->stop)
		return wfail(w, RR_FAIL_STOPPED);
	int64_t left;
	if (over(w, ticks(w), since, &left)) {
		w->waiting = waiting;
		return wfail(w, RR_FAIL_STALL);
	}
	return 0;
}

// Notes the sequence byte of a UD message q received: the immediate's low
// byte, or the data's last byte, which follows the GRH. A latency
// requester's answer either carries the sequence of its request (matched)
// or is the late answer to one that timed out.
static void ud_received(struct rr_worker *w, struct rr_qp_io *q, const struct ibv_wc *wc)
{
	const struct rr_run *r = w->run;
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		q->rseq = (uint8_t)be32toh(wc->imm_data);
	else
		q->rseq = ((volatile uint8_t *)q->rbuf)[r->grh + r->size - 1];
	if (r->measure != RR_LATENCY || !(w->role & RR_ROLE_SEND))
		return;
	if (q->rseq == q->seq && !q->matched)
		q->matched = 1;
	else
		q->late++;
}

// owner is the QP of this worker a receive completion with QP number
// qpn belongs to: q itself, or on a shared receive CQ any of the
// worker's QPs; NULL if none (a completion of a QP the worker does not
// drive, which its CQ cannot hold).
static struct rr_qp_io *owner(struct rr_worker *w, struct rr_qp_io *q, uint32_t qpn)
{
	if (q->qp->qp_num == qpn)
		return q;
	if (!w->by_qpn)
		return NULL;
	for (uint32_t i = qpn & w->qpn_mask;; i = (i + 1) & w->qpn_mask) {
		struct rr_qp_io *o = w->by_qpn[i];
		if (!o || o->qp->qp_num == qpn)
			return o;
	}
}

// Polls cq once for q and accounts for what it finds. Send WRs carry
// their 1-based sequence number as wr_id, and an RC/UC send queue
// completes in order, so the last send completion says how many WRs are
// done (under CQ moderation, unsignaled WRs before it included). A
// receive is counted on the QP it arrived on, which on a shared receive
// CQ may be another of the worker's QPs.
static int poll_cq(struct rr_worker *w, struct rr_qp_io *q, struct ibv_cq *cq, int stamp_recv)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(cq, 16, wc);
	if (n < 0) {
		w->err_errno = EIO;
		return wfail(w, RR_FAIL_POLL);
	}
	int64_t now = 0;
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			w->wc_status = wc[i].status;
			w->vendor_err = wc[i].vendor_err;
			w->wc_opcode = wc[i].opcode;
			w->wc_qpn = wc[i].qp_num;
			return wfail(w, RR_FAIL_WC);
		}
		if (!(wc[i].opcode & IBV_WC_RECV)) {
			q->completed = wc[i].wr_id;
			continue;
		}
		struct rr_qp_io *o = owner(w, q, wc[i].qp_num);
		if (!o) {
			w->wc_qpn = wc[i].qp_num;
			w->err_errno = ENOENT;
			return wfail(w, RR_FAIL_POLL);
		}
		o->received++;
		if (w->run->ud)
			ud_received(w, o, &wc[i]);
		if (stamp_recv) {
			if (now == 0)
				now = rr_now_ns();
			if (o->t_first_recv == 0)
				o->t_first_recv = now;
			o->t_last_recv = now;
		}
	}
	return n;
}

// Polls q's CQ, and its shared receive CQ if it has one, once each.
static int poll_q(struct rr_worker *w, struct rr_qp_io *q, int stamp_recv)
{
	int n = poll_cq(w, q, q->cq, stamp_recv);
	if (n < 0 || q->rcq == q->cq)
		return n;
	int m = poll_cq(w, q, q->rcq, stamp_recv);
	return m < 0 ? m : n + m;
}

static int wait_event(struct rr_worker *w, int64_t left_ns);

// Blocks on the worker's completion channel until an event, a stop
// request or the stall deadline. The caller armed the CQs it waits on
// and polled them once more after arming, so no completion is missed.
static int block(struct rr_worker *w, uint64_t *since, int waiting)
{
	if (w->run->stop)
		return wfail(w, RR_FAIL_STOPPED);
	int64_t left;
	if (over(w, ticks(w), since, &left)) {
		w->waiting = waiting;
		return wfail(w, RR_FAIL_STALL);
	}
	return wait_event(w, left);
}

// Sleeps on the worker's completion channel for at most left_ns (and at
// most EVENT_SLICE_MS), and consumes the event that woke it, if any.
static int wait_event(struct rr_worker *w, int64_t left_ns)
{
	int ms = (int)(left_ns / 1000000) + 1;
	if (ms > EVENT_SLICE_MS)
		ms = EVENT_SLICE_MS;
	// The wake fd stays readable once written, so it is watched only
	// until peer_done is set: a wait that must go on after that (a last
	// completion) then sleeps on its channel instead of spinning. A stop
	// after peer_done waits for the slice, as every stop did before.
	struct pollfd p[2] = {{.fd = w->ch->fd, .events = POLLIN}, {.fd = w->run->wake_fd, .events = POLLIN}};
	nfds_t nfds = (w->run->wake_fd >= 0 && !w->run->peer_done) ? 2 : 1;
	int rc = poll(p, nfds, ms);
	if (rc < 0 && errno != EINTR) {
		w->err_errno = errno;
		return wfail(w, RR_FAIL_EVENT);
	}
	if (rc <= 0 || !(p[0].revents & (POLLIN | POLLERR | POLLHUP)))
		return 0;
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(w->ch, &cq, &ctx)) {
		w->err_errno = errno;
		return wfail(w, RR_FAIL_EVENT);
	}
	// Acked one by one: destroying a CQ waits for every event read from
	// it to be acked, so none may be left behind on any exit path.
	ibv_ack_cq_events(cq, 1);
	w->events++;
	return 0;
}

static int arm(struct rr_worker *w, struct rr_qp_io *q)
{
	int rc = ibv_req_notify_cq(q->cq, 0);
	if (!rc && q->rcq != q->cq)
		rc = ibv_req_notify_cq(q->rcq, 0);
	if (rc) {
		w->err_errno = rc;
		return wfail(w, RR_FAIL_EVENT);
	}
	return 0;
}

static inline int reached(struct rr_qp_io *q, int want, uint64_t target)
{
	return want == WANT_SEND ? q->completed >= target : q->received >= target;
}

// Waits until q has target send (or receive) completions. A responder
// (done_ok) gives up with DONE once the senders have finished.
static int wait_q(struct rr_worker *w, struct rr_qp_io *q, int want, uint64_t target, int done_ok)
{
	uint64_t since = 0; // ticks(w) when the wait began
	uint32_t spins = 0;
	int waiting = want == WANT_SEND ? RR_WAIT_SEND_COMP : RR_WAIT_RECV_COMP;
	for (;;) {
		if (reached(q, want, target))
			return 0;
		int n = poll_q(w, q, 0);
		if (n < 0)
			return -1;
		if (n > 0)
			continue;
		if (done_ok && w->run->peer_done)
			return DONE;
		if (w->ch) {
			if (arm(w, q))
				return -1;
			n = poll_q(w, q, 0);
			if (n < 0)
				return -1;
			if (n == 0 && block(w, &since, waiting))
				return -1;
			continue;
		}
		if ((++spins & (SPIN_CHECK - 1)) == 0 && check(w, &since, waiting))
			return -1;
	}
}

// Spins until the last byte of q's receive area reads seq: an RDMA WRITE
// makes no completion at its target, so memory is all there is to watch.
// Meanwhile it reaps q's send completions, so an error completion ends
// the wait at once.
static int wait_byte(struct rr_worker *w, struct rr_qp_io *q, uint8_t seq, int done_ok)
{
	volatile uint8_t *p = q->rbuf + w->run->size - 1;
	uint64_t since = 0; // ticks(w) when the wait began
	uint32_t spins = 0;
	while (*p != seq) {
		if ((++spins & (SPIN_CHECK - 1)) != 0)
			continue;
		if (q->completed < q->posted && poll_q(w, q, 0) < 0)
			return -1;
		if (done_ok && w->run->peer_done)
			return DONE;
		if (check(w, &since, RR_WAIT_PEER_DATA))
			return -1;
	}
	// The payload before the last byte must not be read ahead of it.
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return 0;
}

// Gives n receives back to q: to its own receive queue, or to the side's
// shared one, which every QP of the side takes from.
static int post_recv(struct rr_worker *w, struct rr_qp_io *q, uint32_t n)
{
	struct rr_run *r = w->run;
	int rc = rr_post_recvs(q->qp, r->srq, q->rbuf, r->recv_len, q->lkey, n);
	if (rc) {
		w->err_errno = rc;
		return wfail(w, RR_FAIL_POST);
	}
	if (r->srq)
		w->srq_posted += n;
	else
		q->recv_posted += n;
	return 0;
}

static int send_opcode(int op)
{
	switch (op) {
	case RR_SEND:
		return IBV_WR_SEND;
	case RR_SEND_IMM:
		return IBV_WR_SEND_WITH_IMM;
	case RR_WRITE:
		return IBV_WR_RDMA_WRITE;
	case RR_WRITE_IMM:
		return IBV_WR_RDMA_WRITE_WITH_IMM;
	case RR_READ:
		return IBV_WR_RDMA_READ;
	case RR_FETCH_ADD:
		return IBV_WR_ATOMIC_FETCH_AND_ADD;
	default:
		return IBV_WR_ATOMIC_CMP_AND_SWP;
	}
}

static int is_atomic(int op)
{
	return op == RR_FETCH_ADD || op == RR_CMP_SWAP;
}

// Fills q's WR template: one per post-list slot, chained.
static void prepare_wrs(struct rr_worker *w, struct rr_qp_io *q)
{
	struct rr_run *r = w->run;
	for (uint32_t i = 0; i < r->post_list; i++) {
		struct ibv_send_wr *wr = &q->wrs[i];
		struct ibv_sge *sge = &q->sges[i];
		memset(wr, 0, sizeof(*wr));
		sge->lkey = q->lkey;
		sge->length = r->size;
		// Reads and atomics bring their data back into the send area;
		// the receive area is what the peer reads and writes.
		sge->addr = (uintptr_t)q->sbuf;
		wr->sg_list = sge;
		wr->num_sge = 1;
		wr->opcode = send_opcode(r->op);
		if (r->ud) {
			wr->wr.ud.ah = q->ah;
			wr->wr.ud.remote_qpn = q->remote_qpn;
			wr->wr.ud.remote_qkey = q->remote_qkey;
		} else if (is_atomic(r->op)) {
			wr->wr.atomic.remote_addr = q->raddr;
			wr->wr.atomic.rkey = q->rkey;
		} else {
			wr->wr.rdma.remote_addr = q->raddr;
			wr->wr.rdma.rkey = q->rkey;
		}
		if (r->size <= r->max_inline && r->op != RR_READ && !is_atomic(r->op))
			wr->send_flags = IBV_SEND_INLINE;
		wr->next = i + 1 < r->post_list ? &q->wrs[i + 1] : NULL;
	}
}

// Marks send WR number seqno of a QP (1-based) as asking for a completion
// or not: every cq_mod-th asks, and the last (0: not known), so a run ends
// with every WR accounted for and its send queue empty for the next run.
static inline void ask_completion(const struct rr_run *r, struct ibv_send_wr *wr, uint64_t seqno, uint64_t last)
{
	if (seqno % r->cq_mod == 0 || seqno == last)
		wr->send_flags |= IBV_SEND_SIGNALED;
	else
		wr->send_flags &= ~IBV_SEND_SIGNALED;
}

// The latency loops' WRs are moderated too. A ping-pong's answer says its
// request arrived, so a send completion is needed only to free send queue
// slots, and perftest asks on every cq_mod-th. Asking on every WR polls one
// more completion per round trip, and where the ACK's completion comes
// before the answer (a NIC; soft-RoCE queues it before the post returns)
// wakes an event-mode waiter once more. A read's or an atomic's completion
// is its round trip, so each asks; so does each WR of a run given by a
// duration, which does not know its last.
//
// On UD every WR asks too: a responder answers until the requester is
// done, so neither side knows its last WR.
static int lat_every_wr_asks(const struct rr_run *r)
{
	return r->op == RR_READ || is_atomic(r->op) || r->duration_ns || r->ud;
}

// Posts one WR (the latency loops).
static int post_one(struct rr_worker *w, struct rr_qp_io *q)
{
	struct rr_run *r = w->run;
	struct ibv_send_wr *wr = &q->wrs[0], *bad;
	if (q->posted - q->completed >= r->tx_depth && wait_q(w, q, WANT_SEND, q->posted - r->tx_depth + 1, 0))
		return -1;
	wr->next = NULL;
	wr->wr_id = q->posted + 1;
	if (lat_every_wr_asks(r))
		wr->send_flags |= IBV_SEND_SIGNALED;
	else
		ask_completion(r, wr, q->posted + 1, r->warmup + r->iters);
	wr->imm_data = htobe32(q->seq);
	if (r->op == RR_FETCH_ADD) {
		wr->wr.atomic.compare_add = 1;
	} else if (r->op == RR_CMP_SWAP) {
		wr->wr.atomic.compare_add = q->atomic_next;
		wr->wr.atomic.swap = q->atomic_next + 1;
	}
	int rc = ibv_post_send(q->qp, wr, &bad);
	if (rc) {
		w->err_errno = rc;
		return wfail(w, RR_FAIL_POST);
	}
	q->posted++;
	return 0;
}

// Gives back the receives q's queue is missing: a UD message that finds
// no receive posted is dropped, so each one taken, by an answer or a late
// answer, wherever it was polled, is posted again at once.
static int ud_refill(struct rr_worker *w, struct rr_qp_io *q)
{
	int64_t posted = (int64_t)(q->recv_posted - q->received);
	if (posted >= (int64_t)w->run->rx_depth)
		return 0;
	return post_recv(w, q, (uint32_t)((int64_t)w->run->rx_depth - posted));
}

// Waits for the answer to q's request, posted at t0 (ticks), for at most
// lost_ns: LOST when it did not come.
static int ud_wait_answer(struct rr_worker *w, struct rr_qp_io *q, uint64_t t0)
{
	struct rr_run *r = w->run;
	uint32_t spins = 0;
	for (;;) {
		int n = poll_q(w, q, 0);
		if (n < 0 || ud_refill(w, q))
			return -1;
		if (q->matched)
			return 0;
		if (n > 0)
			continue;
		if (!w->ch && (++spins & (SPIN_CHECK - 1)) != 0)
			continue;
		if (r->stop)
			return wfail(w, RR_FAIL_STOPPED);
		int64_t left = r->lost_ns - (int64_t)ticks_ns(w, ticks(w) - t0);
		if (left <= 0) {
			q->timed_out++;
			return LOST;
		}
		if (w->ch) {
			if (arm(w, q))
				return -1;
			n = poll_q(w, q, 0);
			if (n < 0 || ud_refill(w, q))
				return -1;
			if (n == 0 && wait_event(w, left))
				return -1;
		}
	}
}

// One UD round trip from the requester's side: send or send_imm, whose
// answer may never come.
static int ud_request(struct rr_worker *w, struct rr_qp_io *q)
{
	struct rr_run *r = w->run;
	if (r->op == RR_SEND)
		q->sbuf[r->size - 1] = q->seq;
	q->matched = 0;
	uint64_t t0 = ticks(w);
	if (post_one(w, q))
		return -1;
	return ud_wait_answer(w, q, t0);
}

// One round trip from the requester's side.
static int lat_request(struct rr_worker *w, struct rr_qp_io *q)
{
	struct rr_run *r = w->run;
	q->seq = (uint8_t)(q->seq % 255 + 1); // never 0, the receive areas' initial byte
	if (r->ud)
		return ud_request(w, q);
	switch (r->op) {
	case RR_WRITE:
		q->sbuf[r->size - 1] = q->seq;
		if (post_one(w, q))
			return -1;
		return wait_byte(w, q, q->seq, 0);
	case RR_SEND:
	case RR_SEND_IMM:
	case RR_WRITE_IMM: {
		if (r->op != RR_WRITE_IMM)
			q->sbuf[r->size - 1] = q->seq;
		uint64_t want = q->received + 1;
		if (post_one(w, q) || wait_q(w, q, WANT_RECV, want, 0))
			return -1;
		return post_recv(w, q, 1);
	}
	default: { // read and atomics: the round trip is the completion
		if (post_one(w, q) || wait_q(w, q, WANT_SEND, q->posted, 0))
			return -1;
		if (is_atomic(r->op)) {
			// Both return the word's value before the operation.
			uint64_t got = *(volatile uint64_t *)q->sbuf;
			if (got != q->atomic_next)
				return wfail(w, RR_FAIL_VALIDATE);
			q->atomic_next++;
		}
		return 0;
	}
	}
}

// Answers one ping-pong from the responder's side. DONE when the senders
// have finished and nothing more will come.
static int lat_answer(struct rr_worker *w, struct rr_qp_io *q)
{
	struct rr_run *r = w->run;
	q->seq = (uint8_t)(q->seq % 255 + 1);
	int rc;
	if (r->op == RR_WRITE) {
		if ((rc = wait_byte(w, q, q->seq, 1)))
			return rc;
		q->sbuf[r->size - 1] = q->seq;
		return post_one(w, q);
	}
	if ((rc = wait_q(w, q, WANT_RECV, q->received + 1, 1)))
		return rc;
	if (post_recv(w, q, 1))
		return -1;
	if (r->op != RR_WRITE_IMM)
		q->sbuf[r->size - 1] = q->seq;
	return post_one(w, q);
}

// Round trips wait in w->samples, in ticks, and go into the histogram a
// batch at a time between round trips (never inside one): a bucket of the
// 256 KiB histogram is a cold line for every sample, and updating it took
// 0.3-0.8 us (medians, under emulation) on the round trip's critical path.
// Each sample is converted to nanoseconds once, so the statistics are
// exact in nanoseconds as before.
static void samples_flush(struct rr_worker *w)
{
	for (uint32_t k = 0; k < w->nsamples; k++)
		hist_record(w, ticks_ns(w, w->samples[k]));
	w->nsamples = 0;
}

static int lat_requester(struct rr_worker *w)
{
	struct rr_run *r = w->run;
	uint64_t tick_begin = 0;
	// Warm-up and iteration counts are per QP; the QPs take turns.
	uint64_t nq = (uint64_t)w->nq, warm = r->warmup * nq, total = (r->warmup + r->iters) * nq;
	uint64_t heard = ticks(w); // UD: when an answer last arrived
	for (uint64_t i = 0;; i++) {
		w->iter = i;
		if (i == warm) {
			w->t_begin = rr_now_ns();
			tick_begin = ticks(w);
		}
		if (r->duration_ns ? (i > warm && ticks_ns(w, ticks(w) - tick_begin) >= (uint64_t)r->duration_ns) : i >= total)
			break;
		// Waits look at the stop flag only after SPIN_CHECK spins, which a
		// fast round trip never reaches; a stop must end a run that keeps
		// making progress too. Outside the timed region.
		if (r->stop)
			return wfail(w, RR_FAIL_STOPPED);
		struct rr_qp_io *q = &w->q[i % nq];
		uint64_t got = q->received;
		uint64_t t0 = ticks(w);
		int rc = lat_request(w, q);
		uint64_t t1 = ticks(w);
		if (q->received != got)
			heard = t1;
		if (rc == LOST) {
			// A path that answers nothing for stall_ns ends the run:
			// what was sent and lost is the result, not a stall.
			if ((int64_t)ticks_ns(w, t1 - heard) >= r->stall_ns) {
				w->silent = 1;
				break;
			}
			continue;
		}
		if (rc)
			return -1;
		if (i >= warm) {
			w->samples[w->nsamples++] = t1 - t0;
			if (w->nsamples == RR_SAMPLE_BATCH)
				samples_flush(w);
		}
	}
	w->t_end = rr_now_ns();
	if (w->t_begin == 0) // a silent UD path ended the run in its warm-up
		w->t_begin = w->t_end;
	else
		clk_check(w, w->t_end - w->t_begin, ticks(w) - tick_begin);
	samples_flush(w);
	for (int k = 0; k < w->nq; k++)
		if (wait_q(w, &w->q[k], WANT_SEND, w->q[k].posted, 0))
			return -1;
	return 0;
}

// Answers UD round trips on whichever QP has one, until the requester is
// done: a request may be lost, so neither the count nor the order of
// requests is known. Each answer carries its request's sequence byte.
static int ud_lat_responder(struct rr_worker *w)
{
	struct rr_run *r = w->run;
	for (;;) {
		if (r->stop)
			return wfail(w, RR_FAIL_STOPPED);
		int progress = 0;
		for (int k = 0; k < w->nq; k++) {
			struct rr_qp_io *q = &w->q[k];
			int n = poll_q(w, q, 0);
			if (n < 0)
				return -1;
			progress += n;
			// A request is answered as its receive is given back, so the
			// receives missing from the queue are the requests not yet
			// answered, those seen by the poll below included.
			if ((int64_t)(q->recv_posted - q->received) >= (int64_t)r->rx_depth)
				continue;
			if (ud_refill(w, q))
				return -1;
			q->seq = q->rseq;
			if (r->op == RR_SEND)
				q->sbuf[r->size - 1] = q->seq;
			if (post_one(w, q))
				return -1;
			w->iter++;
			progress++;
		}
		if (progress)
			continue;
		if (r->peer_done)
			break;
		if (w->ch) {
			int n = 0;
			for (int k = 0; k < w->nq && n == 0; k++) {
				if (arm(w, &w->q[k]))
					return -1;
				n = poll_q(w, &w->q[k], 0);
				if (n < 0)
					return -1;
			}
			if (n == 0 && wait_event(w, (int64_t)EVENT_SLICE_MS * 1000000))
				return -1;
		}
	}
	for (int k = 0; k < w->nq; k++)
		if (wait_q(w, &w->q[k], WANT_SEND, w->q[k].posted, 0))
			return -1;
	return 0;
}

static int lat_responder(struct rr_worker *w)
{
	// A run given by iterations ends after its last answer: the
	// requester sends exactly that many pings per QP, so this side knows
	// its own end without the peer's Done (a folded session sends none).
	// A run given by a duration answers until the requester is done.
	struct rr_run *r = w->run;
	uint64_t total = r->duration_ns ? 0 : (r->warmup + r->iters) * (uint64_t)w->nq;
	for (uint64_t i = 0; !total || i < total; i++) {
		w->iter = i;
		if (w->run->stop) // as in lat_requester
			return wfail(w, RR_FAIL_STOPPED);
		// A responder with several QPs answers them in the order the
		// requester uses them: round robin.
		int rc = lat_answer(w, &w->q[i % (uint64_t)w->nq]);
		if (rc == DONE)
			break;
		if (rc)
			return -1;
	}
	// Every answer was signaled; reap the last ones before returning. A
	// session kept for another run keeps its CQs, and a completion left
	// in one would be counted by the next run, whose counts start at
	// zero: its completed would pass its posted and its window would
	// never open again. The requester has every answer already, so
	// their ACKs are on their way.
	for (int k = 0; k < w->nq; k++)
		if (wait_q(w, &w->q[k], WANT_SEND, w->q[k].posted, 0))
			return -1;
	return 0;
}

// Posts as many WRs on q as the window allows, a post list at a time,
// signaling every cq_mod-th and the last one. Returns the number posted.
// A duration run's deadline *end counts from the worker's first post, not
// from the barrier: the result measures first post to last completion, and
// a thread scheduled late would otherwise measure less than the duration.
static int bw_post(struct rr_worker *w, struct rr_qp_io *q, uint64_t total, int64_t *end, int *closed)
{
	struct rr_run *r = w->run;
	int timed = r->duration_ns != 0;
	int posted = 0;
	while (!*closed) {
		// A duration run ends only at a moderation boundary, so its
		// last WR was signaled and every WR is accounted for.
		if (timed && *end && q->posted % r->cq_mod == 0 && rr_now_ns() >= *end) {
			*closed = 1;
			break;
		}
		uint64_t left = timed ? r->post_list : total - q->posted;
		if (left == 0) {
			*closed = 1;
			break;
		}
		uint32_t batch = left < r->post_list ? (uint32_t)left : r->post_list;
		if (q->posted - q->completed + batch > r->tx_depth)
			break;
		for (uint32_t k = 0; k < batch; k++) {
			struct ibv_send_wr *wr = &q->wrs[k];
			uint64_t seqno = q->posted + k + 1;
			wr->wr_id = seqno;
			ask_completion(r, wr, seqno, timed ? 0 : total);
			wr->next = k + 1 < batch ? &q->wrs[k + 1] : NULL;
		}
		if (q->t_first_post == 0) {
			q->t_first_post = rr_now_ns();
			if (timed && *end == 0)
				*end = q->t_first_post + r->duration_ns;
		}
		struct ibv_send_wr *bad;
		int rc = ibv_post_send(q->qp, &q->wrs[0], &bad);
		if (rc) {
			w->err_errno = rc;
			return wfail(w, RR_FAIL_POST);
		}
		q->posted += batch;
		posted += batch;
	}
	return posted;
}

// Counts a worker's senders as finished; the last one tells Go (through
// notify_fd), which tells the peer.
static void sender_finished(struct rr_worker *w)
{
	struct rr_run *r = w->run;
	if (__atomic_add_fetch(&r->finished_senders, 1, __ATOMIC_ACQ_REL) == r->nsenders) {
		// Wakes Go, which tells the peer; no one polls for this.
		if (r->notify_fd >= 0) {
			uint64_t one = 1;
			ssize_t n = write(r->notify_fd, &one, sizeof(one));
			(void)n;
		}
	}
}

// Gives the side's shared receive queue back what this worker's QPs took
// from it, wherever they were polled: each worker replaces its own takes
// one for one, so the queue stays full without a count shared between
// threads.
static int srq_refill(struct rr_worker *w)
{
	uint64_t taken = 0;
	for (int k = 0; k < w->nq; k++)
		taken += w->q[k].received;
	if (taken <= w->srq_posted)
		return 0;
	return post_recv(w, &w->q[0], (uint32_t)(taken - w->srq_posted));
}

// Whether a UD receiver short of its count has waited long enough: the
// peer's senders are done and nothing has arrived for lost_ns since, so
// the rest is lost.
static int ud_drained(struct rr_worker *w, int progress)
{
	struct rr_run *r = w->run;
	if (!r->peer_done)
		return 0;
	uint64_t now = ticks(w);
	if (w->drain_since == 0 || progress) {
		w->drain_since = now;
		return 0;
	}
	return (int64_t)ticks_ns(w, now - w->drain_since) >= r->lost_ns;
}

static int bw_worker(struct rr_worker *w)
{
	struct rr_run *r = w->run;
	int sender = w->role & RR_ROLE_SEND;
	int receiver = w->role & RR_ROLE_RECV;
	int64_t end = 0; // set by the first post of a duration run
	int closed[w->nq]; // posting finished, per QP
	int sdone[w->nq];  // every posted WR completed
	uint64_t since = 0; // ticks(w) when the wait began
	uint32_t spins = 0;
	int senders_finished = 0;
	memset(closed, 0, sizeof(closed));
	memset(sdone, 0, sizeof(sdone));
	w->t_begin = rr_now_ns();
	for (;;) {
		int progress = 0, pending = 0, short_of = 0;
		for (int k = 0; k < w->nq; k++) {
			struct rr_qp_io *q = &w->q[k];
			if (sender && !sdone[k]) {
				int n = bw_post(w, q, r->iters, &end, &closed[k]);
				if (n < 0)
					return -1;
				progress += n;
			}
			int n = poll_q(w, q, receiver);
			if (n < 0)
				return -1;
			progress += n;
			if (n > 0 && receiver && r->srq) {
				if (srq_refill(w))
					return -1;
			} else if (n > 0 && receiver && q->received > 0) {
				// Keep the receive queue full: every receive taken is
				// given back.
				uint64_t missing = r->rx_depth - (q->recv_posted - q->received);
				if (missing && post_recv(w, q, (uint32_t)missing))
					return -1;
			}
			if (sender && !sdone[k]) {
				if (closed[k] && q->completed == q->posted) {
					sdone[k] = 1;
					q->t_last_comp = rr_now_ns();
				} else {
					pending = 1;
				}
			}
			// A duration run's receiver cannot know the count; it stops
			// once the peer's senders are done and its CQ is empty. On
			// RC every completed send was received, so nothing is lost.
			// On UD messages may be lost: a receiver short of the count
			// drains (ud_drained) instead.
			if (receiver && r->ud)
				short_of |= r->duration_ns || q->received < r->iters;
			else if (receiver && (r->duration_ns ? !(r->peer_done && n == 0) : q->received < r->iters))
				pending = 1;
		}
		if (short_of && !ud_drained(w, progress))
			pending = 1;
		if (sender && !senders_finished) {
			int all = 1;
			for (int k = 0; k < w->nq; k++)
				all &= sdone[k];
			if (all) {
				senders_finished = 1;
				sender_finished(w);
			}
		}
		if (!pending)
			break;
		if (progress) {
			// A worker that keeps moving data never spins SPIN_CHECK
			// times, so the stop flag is looked at here too.
			if (r->stop)
				return wfail(w, RR_FAIL_STOPPED);
			since = 0;
			continue;
		}
		// A UD receiver waits for the peer's senders however long they
		// take: what they sent and the receiver missed is loss, not a
		// stall, and their end comes over the control channel.
		if (r->ud && !sender)
			since = 0;
		if (w->ch) {
			int n = 0;
			for (int k = 0; k < w->nq && n == 0; k++) {
				if (arm(w, &w->q[k]))
					return -1;
				n = poll_q(w, &w->q[k], receiver);
				if (n < 0 || (receiver && r->srq && srq_refill(w)))
					return -1;
			}
			if (n == 0 && block(w, &since, sender ? RR_WAIT_SEND_COMP : RR_WAIT_RECV_COMP))
				return -1;
			continue;
		}
		if ((++spins & (SPIN_CHECK - 1)) == 0 && check(w, &since, sender ? RR_WAIT_SEND_COMP : RR_WAIT_RECV_COMP))
			return -1;
	}
	w->t_end = rr_now_ns();
	return 0;
}

// All workers start together: the last to arrive releases the others.
// Hand-made rather than pthread_barrier, so that a worker that never
// started (thread creation failed) cannot leave the rest waiting.
static int barrier(struct rr_worker *w)
{
	struct rr_run *r = w->run;
	int n = __atomic_add_fetch(&r->arrived, 1, __ATOMIC_ACQ_REL);
	if (n == r->nw)
		r->t_start = rr_now_ns();
	while (__atomic_load_n(&r->arrived, __ATOMIC_ACQUIRE) < r->nw) {
		if (r->stop)
			return wfail(w, RR_FAIL_STOPPED);
		sched_yield();
	}
	while (__atomic_load_n(&r->t_start, __ATOMIC_ACQUIRE) == 0)
		;
	return 0;
}

static int needs_recv(int op)
{
	return op == RR_SEND || op == RR_SEND_IMM || op == RR_WRITE_IMM;
}

int rr_prepare(struct rr_run *r)
{
	// The first run of a process calibrates the cycle counter here, before
	// the peer is told to start, rather than in a worker after it.
	pthread_once(&clk_once, clk_setup);
	for (int i = 0; i < r->nw; i++) {
		struct rr_worker *w = &r->w[i];
		w->run = r;
		w->min = UINT64_MAX;
		for (int k = 0; k < w->nq; k++) {
			struct rr_qp_io *q = &w->q[k];
			prepare_wrs(w, q);
			// Receives must be posted before the peer can send: a
			// latency requester needs them for the replies.
			// A pair kept across runs still holds the receives the last
			// run left posted; top the queue up, do not overfill it.
			if (!r->srq && needs_recv(r->op) && ((w->role & RR_ROLE_RECV) || r->measure == RR_LATENCY) &&
			    q->recv_posted < r->rx_depth && post_recv(w, q, (uint32_t)(r->rx_depth - q->recv_posted)))
				return -1;
		}
	}
	if (r->srq && r->nw > 0 && r->w[0].nq > 0 && needs_recv(r->op) && ((r->w[0].role & RR_ROLE_RECV) || r->measure == RR_LATENCY)) {
		// The side's shared queue, topped up once for all its QPs; its
		// limit, an eighth of it, raises an event when it runs low.
		struct rr_qp_io *q = &r->w[0].q[0];
		if (r->srq_left < r->srq_depth) {
			uint32_t n = (uint32_t)(r->srq_depth - r->srq_left);
			int rc = rr_post_recvs(NULL, r->srq, q->rbuf, r->recv_len, q->lkey, n);
			if (rc) {
				r->w[0].err_errno = rc;
				return wfail(&r->w[0], RR_FAIL_POST);
			}
			r->srq_prefilled = n;
		}
		int rc = rr_arm_srq_limit(r->srq, r->srq_depth / 8 > 0 ? r->srq_depth / 8 : 1);
		if (rc) {
			r->w[0].err_errno = rc;
			return wfail(&r->w[0], RR_FAIL_POST);
		}
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct rr_worker *w = arg;
	struct rr_run *r = w->run;
	if (w->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
		if (rc) {
			w->err_errno = rc;
			wfail(w, RR_FAIL_THREAD);
		}
	}
	clk_take(w);
	if (w->fail == RR_OK && barrier(w) == 0) {
		if (r->measure == RR_BANDWIDTH)
			bw_worker(w);
		else if (w->role & RR_ROLE_SEND)
			lat_requester(w);
		else if (r->ud)
			ud_lat_responder(w);
		else
			lat_responder(w);
	}
	// A bandwidth sender reports itself as soon as its sending is done;
	// one that failed or only measured latency reports here.
	if ((w->role & RR_ROLE_SEND) && !(r->measure == RR_BANDWIDTH && w->fail == RR_OK))
		sender_finished(w);
	return NULL;
}

// An endpoint's runs start on a thread of their own, and Go waits for it
// on an eventfd in its poller rather than in a cgo call: entering a cgo
// call wakes Go's monitor thread (sysmon), which then wakes every 20 us at
// first, backing off, for as long as the call lasts, on the CPUs
// busy-poll workers spin on. The thread is kept between runs, parked, as
// the calling thread was: a prober runs every second or so, and a thread
// made and ended per run costs it more than the run's traffic. Measured
// (exporter/README.md, Probe cost): busy-poll probes' mean round trip
// 22-65% lower and the exporter's CPU 10-39% lower; event mode the same
// within the VM's spread.
struct rr_runner {
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rr_run *job; // the run to start, handed over under mu
	int quit;
	int done_fd;
};

static void *runner_main(void *arg)
{
	struct rr_runner *t = arg;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (!t->job && !t->quit)
			pthread_cond_wait(&t->cv, &t->mu);
		if (t->quit && !t->job)
			break;
		struct rr_run *r = t->job;
		t->job = NULL;
		pthread_mutex_unlock(&t->mu);
		r->done_rc = rr_run_workers(r);
		uint64_t one = 1;
		// Go may free r as soon as this is written.
		ssize_t n = write(t->done_fd, &one, sizeof(one));
		(void)n;
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

struct rr_runner *rr_runner_open(int done_fd, int *err)
{
	struct rr_runner *t = calloc(1, sizeof(*t));
	if (!t) {
		*err = ENOMEM;
		return NULL;
	}
	t->done_fd = done_fd;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	int rc = pthread_create(&t->thr, NULL, runner_main, t);
	if (rc) {
		pthread_cond_destroy(&t->cv);
		pthread_mutex_destroy(&t->mu);
		free(t);
		*err = rc;
		return NULL;
	}
	pthread_setname_np(t->thr, "rdmarun-run");
	return t;
}

void rr_runner_submit(struct rr_runner *t, struct rr_run *r)
{
	pthread_mutex_lock(&t->mu);
	t->job = r;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

void rr_runner_close(struct rr_runner *t)
{
	pthread_mutex_lock(&t->mu);
	t->quit = 1;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thr, NULL);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

int rr_run_workers(struct rr_run *r)
{
	r->arrived = 0;
	r->finished_senders = 0;
	r->t_start = 0;
	// A lone unpinned worker runs on the calling thread (the endpoint's
	// runner), which waits for it anyway: a prober runs one worker per
	// probe, every few seconds, and creating and joining a thread each
	// time is most of what a short run costs beyond its traffic. A pinned
	// worker keeps a thread of its own, so the runner is never pinned.
	if (r->nw == 1 && r->w[0].cpu < 0) {
		r->w[0].run = r;
		worker_main(&r->w[0]);
		return r->w[0].fail != RR_OK ? -1 : 0;
	}
	for (int i = 0; i < r->nw; i++) {
		struct rr_worker *w = &r->w[i];
		w->run = r;
		int rc = pthread_create(&w->thr, NULL, worker_main, w);
		if (rc) {
			w->err_errno = rc;
			wfail(w, RR_FAIL_THREAD);
			// Count the missing workers in, so the started ones
			// leave the barrier and see the stop.
			__atomic_add_fetch(&r->arrived, r->nw - i, __ATOMIC_ACQ_REL);
			r->t_start = rr_now_ns();
			break;
		}
		w->started = 1;
	}
	int failed = 0;
	for (int i = 0; i < r->nw; i++) {
		if (r->w[i].started)
			pthread_join(r->w[i].thr, NULL);
		if (r->w[i].fail != RR_OK)
			failed = 1;
	}
	return failed ? -1 : 0;
}
