// Package mesh chooses which of the discovered targets one node probes,
// so that a fleet's probes grow with its size and not with its square.
//
// Every node orders the names of all targets (its own included) on a ring
// by a hash of the name and the current epoch, and probes the next K =
// max_targets names after its own. Nothing is coordinated: every node
// that sees the same target list and the same epoch computes the same ring,
// so each node is probed by exactly the K nodes before it (when K <= N-1),
// not "about K" as with rendezvous hashing, whose in-degree over 1,000
// nodes with K = 16 spreads from 0.3x to 2x of K.
//
// The epoch is unix time / rotate, and each epoch's ring is a fresh
// pseudo-random order, so the pair (a, b) is probed in an epoch with
// probability p = K/(N-1), independently of other epochs. After B periods
// every one of the N(N-1) ordered pairs has been probed with probability at
// least 1-q (by the union bound) when
//
//	B = ceil( ln(N(N-1)/q) / -ln(1-K/(N-1)) ),   q = 0.01.
//
// For N = 200, K = 16 that is 182 periods; for N = 1,000, K = 16, 1,141; for
// N = 10,000, K = 32, 7,184. The tests and the simulation measure the real
// number (it is lower: the bound is for the last of all pairs with 99%).
//
// A node joining the ring changes the sets of only the K nodes before it
// (each gains the new node and loses its K-th successor) and gives the new
// node its own set; a node leaving is the reverse. So churn touches at most
// K+1 sets, and probe series start or stop only for those pairs.
//
// Peers that match an always selector (the same rack, say) are probed on
// top of the sample; they add to the in-degree evenly when the groups they
// select are of similar size.
package mesh
