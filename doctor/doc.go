// Package doctor explains why a link is slow or a test fails: it reads
// the host's files (sysfs, procfs, device nodes) and checks, one by one,
// what the seeds' troubleshooting order names: limits, link, PCIe, NUMA,
// MTU, GIDs, CPU frequency, huge pages and RoCE congestion setup. Each
// check says what it expected, what it found, what the difference likely
// costs and how to fix it.
//
// The doctor reads files only, never issues ioctls or verbs calls of its
// own: what only the verbs interface knows (a port's active MTU) comes
// in through Env, so tests run on fixture trees and a host with no
// libibverbs still gets every other check. Where the kernel does not
// expose something, the check says cannot_tell rather than guess.
package doctor
