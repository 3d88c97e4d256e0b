// Package fleet holds the pieces of a fleet run that need no network: the
// host list, which pairs of hosts a pattern tests, the rounds they run
// in, and what the results blame. The coordinator (rdmarun, on any
// machine that reaches every host's rdmarun serve) drives the run; this
// package only plans it and judges it.
//
// Hosts. A Host is a name, the host:port of its serve (ctrl.DefaultPort when
// none is given) and optionally its RDMA devices. ParseHostfile reads a
// hostfile, one host per line, accepting MPI's slots= so an existing MPI
// hostfile works; SlurmHosts expands a Slurm node list with Slurm's own
// scontrol; CheckHosts checks a list from any source for empty names and
// duplicates.
//
// Pairs. A Pattern (all-pairs, ring, pairs, rail, incast) expands a host
// list into Pairs of NICs; A initiates, so A -> B and B -> A are
// different tests. Rail pairs device i of each host with device i of the
// others only, as multi-rail fabrics are wired.
//
// Rounds. Pattern.Rounds, or Schedule for any pair list, splits the pairs
// into rounds run in parallel. A Disjoint round books each NIC at most
// once, so no test shares a NIC with another; complete patterns take the
// fewest rounds (the circle method), others a greedy colouring, and
// parallel caps a round's size. Incast is the one exception: an
// IncastRound is one receiver with all its senders at once, because
// congestion at the receiver is what it measures.
//
// Judging. Outcomes are the per-pair results. A pair is bad when it
// failed, a host did not answer, or it lags: DefaultLagFactor times worse
// than the fleet median of its metric. Matrices lays the verdicts out
// host by host, per metric, for the text and HTML outputs. Suspects names
// what the bad pairs point at and ranks it: a NIC or host bad with most
// of its partners, a link when a pair is bad but both ends pass
// elsewhere; each suspect carries its evidence. Suspects documents the
// rules and thresholds.
package fleet
