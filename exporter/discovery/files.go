package discovery

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/rdmarun/rdmarun/exporter/config"
)

// fileSource follows the target files of the config.
type fileSource struct {
	d       *Discoverer
	paths   []string
	dirs    []string // the files' directories, each once
	last    [][]config.Target
	lastErr []string // per file, so that a lasting failure is logged once

	watcher *fsnotify.Watcher // nil without notifications
	watched map[string]bool
}

func newFileSource(d *Discoverer, paths []string) *fileSource {
	f := &fileSource{d: d, paths: paths, last: make([][]config.Target, len(paths)), lastErr: make([]string, len(paths)), watched: map[string]bool{}}
	for _, p := range paths {
		if dir := filepath.Dir(p); !slices.Contains(f.dirs, dir) {
			f.dirs = append(f.dirs, dir)
		}
	}
	return f
}

// seed takes the last good targets of the same files from prev, if
// their modules still exist.
func (f *fileSource) seed(prev *fileSource) {
	if prev == nil {
		return
	}
	for i, p := range f.paths {
		j := slices.Index(prev.paths, p)
		if j >= 0 && f.d.cfg.CheckTargets(prev.last[j]) == nil {
			f.last[i] = prev.last[j]
		}
	}
}

// watch starts the notifications, on the directories rather than the
// files: an editor or a config manager that writes a new file and renames
// it over the old one replaces the inode a file watch would be on, and
// Kubernetes swaps a whole symlinked directory. Without notifications
// (no inotify instances left, say) the periodic read still follows the
// files, only more slowly.
func (f *fileSource) watch() {
	if len(f.paths) == 0 || f.d.noWatch {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		f.d.metrics.fail(SourceFile)
		f.d.logger.Warn("cannot watch target files; reading them periodically only", "interval", f.d.fileInterval, "err", err)
		return
	}
	f.watcher = w
	f.addWatches()
}

// addWatches watches every directory not watched yet; one that does not
// exist yet is tried again at the next periodic read.
func (f *fileSource) addWatches() {
	if f.watcher == nil {
		return
	}
	for _, dir := range f.dirs {
		if f.watched[dir] {
			continue
		}
		if err := f.watcher.Add(dir); err != nil {
			f.d.logger.Debug("cannot watch the directory of target files yet", "dir", dir, "err", err)
			continue
		}
		f.watched[dir] = true
	}
}

func (f *fileSource) close() {
	if f.watcher != nil {
		_ = f.watcher.Close()
	}
}

// read reads every file and returns their targets in config order. A
// file that cannot be read or is invalid keeps its last good targets.
func (f *fileSource) read() []config.Target {
	var out []config.Target
	for i, p := range f.paths {
		ts, err := config.LoadTargetFile(p)
		if err == nil {
			if err = f.d.cfg.CheckTargets(ts); err != nil {
				err = fmt.Errorf("targets file %s: %w", p, err)
			}
		}
		if err != nil {
			f.d.metrics.fail(SourceFile)
			if msg := err.Error(); msg != f.lastErr[i] {
				f.lastErr[i] = msg
				f.d.logger.Error("cannot use targets file; keeping its last good targets", "file", p, "targets", len(f.last[i]), "err", err)
			}
		} else {
			if f.lastErr[i] != "" {
				f.d.logger.Info("targets file is good again", "file", p, "targets", len(ts))
			}
			f.lastErr[i] = ""
			f.last[i] = ts
			f.d.metrics.refreshed(SourceFile, time.Now())
		}
		out = append(out, f.last[i]...)
	}
	return out
}

// run reads the files again after a notification from one of their
// directories and every file interval, and sends their targets when they
// change.
func (f *fileSource) run(ctx context.Context, send func(update) bool) {
	tick := time.NewTicker(f.d.fileInterval)
	defer tick.Stop()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if f.watcher != nil {
		events, errs = f.watcher.Events, f.watcher.Errors
	}
	// settle is armed by the first notification of a burst and not pushed
	// back by the later ones, so a file written to all the time is still
	// read every settle period.
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	armed := false

	sent := f.flatten()
	reread := func() bool {
		ts := f.read()
		if slices.Equal(ts, sent) {
			return true
		}
		sent = ts
		return send(update{source: SourceFile, targets: ts})
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if f.watched[ev.Name] && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				// The directory itself went, and its watch with it; the
				// periodic read watches it again once it is back.
				delete(f.watched, ev.Name)
				_ = f.watcher.Remove(ev.Name)
			}
			// Any change in the directory counts, not just one to a
			// target file's name: a Kubernetes volume changes by renaming
			// its ..data link, and the files themselves never change.
			if !armed && f.watched[filepath.Dir(ev.Name)] {
				settle.Reset(f.d.settle)
				armed = true
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// Typically an overflow of the event queue: events were lost,
			// so read now rather than wait for the tick.
			f.d.metrics.fail(SourceFile)
			f.d.logger.Warn("watching target files", "err", err)
			if !armed {
				settle.Reset(f.d.settle)
				armed = true
			}
		case <-settle.C:
			armed = false
			if !reread() {
				return
			}
		case <-tick.C:
			f.addWatches()
			if !reread() {
				return
			}
		}
	}
}

func (f *fileSource) flatten() []config.Target {
	var out []config.Target
	for _, ts := range f.last {
		out = append(out, ts...)
	}
	return out
}
