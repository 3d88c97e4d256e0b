//go:build !linux

package main

import "os"

// isTerminal is false where rdmarun does not run its tests: progress
// then prints plain lines, which any output can keep.
func isTerminal(*os.File) bool { return false }
