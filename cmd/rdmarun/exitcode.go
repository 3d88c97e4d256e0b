package main

// Exit codes are part of rdmarun's contract with CI scripts. 2 is never
// used: it is what a Go panic exits with, and must not be mistaken for a
// verdict.
const (
	exitOK          = 0 // everything ran and passed
	exitFailed      = 1 // a threshold failed; in a fleet also a pair that did not finish, or a suspect
	exitInvalid     = 3 // the scenario or the flags are invalid
	exitEnvironment = 4 // no device, no libibverbs, memlock limit, peer unreachable
	exitAborted     = 5 // the run started but aborted on errors
)
