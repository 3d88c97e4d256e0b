package sysfs

import (
	"errors"
	"io/fs"
	"path"
	"strings"
)

// FileError is one file or directory that could not be read or parsed.
type FileError struct {
	// Path is the file as named under its device's or port's directory:
	// "node_guid", "ports", "state", "counters/port_xmit_data".
	Path string
	Err  error
}

func (e FileError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e FileError) Unwrap() error { return e.Err }

// dir reads the files of one device or port directory of fsys, noting
// each one it cannot use.
type dir struct {
	fsys   fs.FS
	name   string // slash-separated, relative to the root of fsys
	errors []FileError
}

func (d *dir) fail(file string, err error) {
	d.errors = append(d.errors, FileError{Path: file, Err: cause(err)})
}

// read returns the trimmed content of file. A file that does not exist
// is an error only when required; ok is false in both cases.
func (d *dir) read(file string, required bool) (string, bool) {
	b, err := fs.ReadFile(d.fsys, path.Join(d.name, file))
	if err != nil {
		if required || !errors.Is(err, fs.ErrNotExist) {
			d.fail(file, err)
		}
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// parse reads file and parses it with f, noting a file that does not
// parse; the zero value stands in for one that failed.
func parse[T any](d *dir, file string, required bool, f func(string) (T, error)) T {
	var zero T
	s, ok := d.read(file, required)
	if !ok {
		return zero
	}
	v, err := f(s)
	if err != nil {
		d.fail(file, err)
		return zero
	}
	return v
}

// cause drops the fs.PathError wrapper, whose path is relative to the
// fs.FS root and would only repeat FileError.Path.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
