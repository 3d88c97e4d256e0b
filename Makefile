# Build, test and demo targets. `make test` is what CI runs; `make demo`
# runs the main job on soft-RoCE in the testbed VM (or on real hardware).

GO        ?= go
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The commit, dirty when VERSION is. The go command records it only when
# it builds in a main checkout (not in a git worktree, not with
# -buildvcs=false), so the build says it; left empty outside git, the
# binaries fall back to what the go command recorded (internal/version).
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)$(if $(filter %-dirty,$(VERSION)),-dirty)
LDFLAGS   := -X github.com/rdmarun/rdmarun/internal/version.Version=$(VERSION) \
	-X github.com/rdmarun/rdmarun/internal/version.Revision=$(REVISION)
BIN       := bin
CACHE     := .cache
TESTBIN   := $(CACHE)/bin
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Each testbed call boots a VM under software emulation: about 7 s plus
# the command. These bound a whole call, hang or not.
TESTBED_TIMEOUT ?= 900

.PHONY: all build test unit nordma chromium-test lint fmt-check vet staticcheck testbed-build \
	testbed-selftest testbed-test demo compare run-start-latency clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

# Everything CI checks, cheapest first.
test: fmt-check vet unit fuzz rules-test nordma staticcheck chromium-test testbed-selftest testbed-test slurm-test package-test

unit:
	$(GO) test -count=1 ./...

# Every fuzz target (parsers, the control channel's frames and handshake)
# for FUZZTIME each: 10,000 inputs in make test (under a minute for all),
# more by hand (make fuzz FUZZTIME=5m). A count, not a duration: Go 1.26's
# fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when a duration runs out (go.dev/issue/75804, fixed in 1.27);
# seen here once in a CI run and once in 18 runs of FuzzRelayResult. A
# crasher lands in the package's testdata/fuzz/ and fails the run with
# its output; commit it with the fix, as a seed that stays.
FUZZTIME ?= 10000x
.PHONY: fuzz
fuzz:
	@git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | sort | while read -r f; do \
		dir=$$(dirname "$$f"); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
			echo "fuzz ./$$dir $$t for $(FUZZTIME)"; \
			out=$$($(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) "./$$dir" 2>&1) || \
				{ echo "$$out" | tail -40; echo "fuzz: $$t in ./$$dir failed; rerun: $(GO) test -run '^$$' -fuzz '^$$t\$$' ./$$dir"; exit 1; }; \
		done; \
	done

# Prometheus rules and Grafana dashboards: promtool checks the rule files
# and runs their unit tests (a firing and a quiet case per alert); the Go
# tests parse every dashboard query with promtool and check each metric
# name against what the exporter exposes. promtool is required here.
PROMTOOL ?= promtool
.PHONY: rules-test
rules-test:
	$(PROMTOOL) check rules prometheus/rules/*.yml
	$(PROMTOOL) test rules prometheus/rules/tests/*.yml
	RDMARUN_REQUIRE_PROMTOOL=1 PROMTOOL=$(PROMTOOL) $(GO) test -count=1 ./dashboards/... ./prometheus/...

# The HTML report, rendered by a real headless Chromium.
chromium-test:
	$(GO) test -count=1 -tags chromium -run Chromium ./runner/report ./runner/compare

# Every package must build without libibverbs too.
nordma:
	$(GO) build -tags nordma ./...
	CGO_ENABLED=0 $(GO) build ./...
	$(GO) vet -tags nordma ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags testbed ./...
	$(GO) vet -tags chromium ./runner/report ./runner/compare

staticcheck:
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags testbed ./...

lint: fmt-check vet staticcheck

testbed-build:
	testbed/build.sh

# The testbed's own checks: boot, exit status, devices, real traffic,
# timeouts, a VM killed mid-run.
testbed-selftest: testbed-build
	testbed/selftest.sh

# Test binaries are built here, on the host, and run inside the VM against
# the real rdma_rxe driver. The package directory is the working
# directory, as under go test, so testdata/ is found.
$(TESTBIN)/%.testbed.test: FORCE
	@mkdir -p $(dir $@)
	$(GO) test -c -tags testbed -o $@ ./$*

testbed-test: testbed-build $(TESTBIN)/rdma.testbed.test $(TESTBIN)/peer.testbed.test $(TESTBIN)/runner.testbed.test \
		$(TESTBIN)/exporter/e2e.testbed.test $(TESTBIN)/cmd/rdmarun.testbed.test $(TESTBIN)/soak.testbed.test \
		$(TESTBIN)/exporter/collector.testbed.test $(TESTBIN)/rdmarun $(TESTBIN)/rdmarun_exporter
	testbed/gotest.sh $(TESTBIN)/rdma.testbed.test rdma
	TESTBED_HOSTS=4 testbed/gotest.sh $(TESTBIN)/rdma.testbed.test rdma -test.run '^(TestLargeMessages|TestMulticast)$$'
	TESTBED_SIW=1 testbed/gotest.sh $(TESTBIN)/rdma.testbed.test rdma -test.run '^(TestSiwMatrix|TestSiwMeasureConnect)$$'
	testbed/gotest.sh $(TESTBIN)/exporter/collector.testbed.test exporter/collector -test.run '^TestCategoriesVM$$'
	TESTBED_SIW=1 testbed/gotest.sh $(TESTBIN)/cmd/rdmarun.testbed.test cmd/rdmarun -test.run '^TestDoctorVM'
	TESTBED_ENV="RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun" testbed/gotest.sh $(TESTBIN)/runner.testbed.test runner -test.skip '^(TestFleetVM|TestCompareQuietVM$$)'
	rm -rf $(CACHE)/fleet-vm
	TESTBED_HOSTS=4 TESTBED_SIW=1 TESTBED_EXPORT=$(CURDIR)/$(CACHE)/fleet-vm TESTBED_ENV="RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun" \
		testbed/gotest.sh $(TESTBIN)/runner.testbed.test runner -test.run '^TestFleetVM'
	FLEET_VM_OUTPUT=$(CURDIR)/$(CACHE)/fleet-vm/TestFleetVMAllPairs \
		$(GO) test -count=1 -tags chromium -run '^TestFleetVMHTMLInChromium$$' -v ./runner/report
	TESTBED_ENV="RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun" testbed/gotest.sh $(TESTBIN)/peer.testbed.test peer
	TESTBED_HOSTS=4 TESTBED_ENV="RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun" testbed/gotest.sh $(TESTBIN)/peer.testbed.test peer -test.run '^TestMulticastServe$$'
	TESTBED_ENV="RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun" testbed/gotest.sh $(TESTBIN)/soak.testbed.test soak -test.run '^(TestSoak|TestMultiQPReceives|TestFalseAlarms)$$'
	TESTBED_SIW=1 TESTBED_ENV="RDMARUN_EXPORTER_BIN=$(CURDIR)/$(TESTBIN)/rdmarun_exporter" \
		testbed/gotest.sh $(TESTBIN)/exporter/e2e.testbed.test exporter/e2e -test.skip '^TestMesh|^TestProbeCost'
	TESTBED_HOSTS=5 TESTBED_ENV="RDMARUN_EXPORTER_BIN=$(CURDIR)/$(TESTBIN)/rdmarun_exporter" \
		testbed/gotest.sh $(TESTBIN)/exporter/e2e.testbed.test exporter/e2e -test.run '^TestMesh'

# The soak (soak/doc.go): one rdmarun serve in the VM answers SOAK_TESTS
# tests (every op, measure, mode, 2 B..1 MiB, 1..8 QPs, kept sessions)
# from SOAK_CLIENTS client processes, one in twenty misbehaving, and its
# fds, goroutines, threads, RSS and the RDMA objects must be back at the
# idle baseline at the end. testbed-test runs the default, 120 tests, each
# misbehaviour once: 2.5 to 3.5 minutes of VM time, measured beside
# another VM. SOAK_SEED replays a run; SOAK_REPORT=FILE keeps the table,
# passed or failed; SOAK_TIMEOUT (seconds) bounds the run: allow about
# 1.7 s per test.
SOAK_TESTS   ?= 120
SOAK_CLIENTS ?= 4
SOAK_TIMEOUT ?= 900
.PHONY: soak
soak: testbed-build $(TESTBIN)/soak.testbed.test $(TESTBIN)/rdmarun
	rm -rf $(CACHE)/soak-export
	status=0; TESTBED_TIMEOUT=$$(( $(SOAK_TIMEOUT) + 120 )) TESTBED_EXPORT=$(CURDIR)/$(CACHE)/soak-export \
		TESTBED_ENV="RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun SOAK_TESTS=$(SOAK_TESTS) SOAK_CLIENTS=$(SOAK_CLIENTS) SOAK_SEED=$(SOAK_SEED)" \
		testbed/gotest.sh $(TESTBIN)/soak.testbed.test soak -test.run '^TestSoak$$' -test.timeout $(SOAK_TIMEOUT)s || status=$$?; \
	$(if $(SOAK_REPORT),cp $(CACHE)/soak-export/soak-report.txt $(SOAK_REPORT) || status=1;) exit $$status

# The false-alarm budget (soak/falsealarm_testbed_test.go): FALSE_ALARM_RUNS
# fresh sessions between one healthy pair, every op, measure and mode,
# 1-8 QPs, 2 B to 16 MiB, the engine's defaults, a busy loop on each vCPU;
# every run must pass. testbed-test runs 24; this runs 1,000 by default,
# about 3 s each alone, 6 or more beside another VM (allowed 10).
# FALSE_ALARM_SEED replays a draw.
FALSE_ALARM_RUNS ?= 1000
.PHONY: false-alarms
false-alarms: testbed-build $(TESTBIN)/soak.testbed.test $(TESTBIN)/rdmarun
	TESTBED_TIMEOUT=$$(( $(FALSE_ALARM_RUNS) * 10 + 300 )) \
		TESTBED_ENV="RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun FALSE_ALARM_RUNS=$(FALSE_ALARM_RUNS) FALSE_ALARM_SEED=$(FALSE_ALARM_SEED)" \
		testbed/gotest.sh $(TESTBIN)/soak.testbed.test soak -test.run '^TestFalseAlarms$$' -test.timeout $$(( $(FALSE_ALARM_RUNS) * 10 + 200 ))s

# rdmarun compare's error rates on the VM: COMPARE_TRIALS pairs of runs of
# scenarios/baseline.yaml (3 passes each, 2 s apart) on a quiet testbed, each pair
# compared (at least 95% must be no significant change), and
# COMPARE_DELAY_TRIALS with 1 ms added to the responder's answers (every
# latency test must regress). testbed-test runs the delayed trial once
# and not the quiet ones, which do not reach 95% yet (37 of 40 measured,
# on a loaded host; runner/compare_testbed_test.go says why); about 20 s
# and 40 s a trial.
COMPARE_TRIALS ?= 40
COMPARE_DELAY_TRIALS ?= 10
.PHONY: compare-trials
compare-trials: testbed-build $(TESTBIN)/runner.testbed.test
	TESTBED_TIMEOUT=$$(( $(COMPARE_TRIALS) * 30 + $(COMPARE_DELAY_TRIALS) * 50 + 300 )) \
		TESTBED_ENV="COMPARE_TRIALS=$(COMPARE_TRIALS) COMPARE_DELAY_TRIALS=$(COMPARE_DELAY_TRIALS)" \
		testbed/gotest.sh $(TESTBIN)/runner.testbed.test runner -test.run '^TestCompare(Quiet|Delayed)VM$$' -test.v \
		-test.timeout $$(( $(COMPARE_TRIALS) * 30 + $(COMPARE_DELAY_TRIALS) * 50 + 200 ))s

# The fleet's false-alarm budget: FLEET_REPEAT healthy 4-host all-pairs
# runs with confirm: 0, then as many with confirm: 1 (no run may fail; no
# suspect with confirm 1). About 40 s a run.
FLEET_REPEAT ?= 30
.PHONY: fleet-false-alarms
fleet-false-alarms: testbed-build $(TESTBIN)/runner.testbed.test $(TESTBIN)/rdmarun
	TESTBED_HOSTS=4 TESTBED_TIMEOUT=$$(( $(FLEET_REPEAT) * 100 + 300 )) \
		TESTBED_ENV="RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun FLEET_REPEAT=$(FLEET_REPEAT)" \
		testbed/gotest.sh $(TESTBIN)/runner.testbed.test runner -test.run '^TestFleetVMHealthyRepeat$$' -test.timeout $$(( $(FLEET_REPEAT) * 100 + 200 ))s

# rdmarun against perftest on a path that drops LOSS_RATES % of packets
# (testbed/loss-compare.sh): LOSS_RUNS interleaved runs of each per op and
# QP count. About 25 minutes with the defaults.
LOSS_RUNS ?= 6
LOSS_RATES ?= 2,5
loss_comma := ,
# 4 cases (2 ops x 2 QP counts) per rate, two tools, 200 s a run at most.
loss_cases = $$(( 4 * $(words $(subst $(loss_comma), ,$(LOSS_RATES))) ))
.PHONY: loss-compare
loss-compare: testbed-build $(TESTBIN)/rdmarun
	TESTBED_TIMEOUT=$$(( $(LOSS_RUNS) * $(loss_cases) * 3 * 200 + 300 )) \
		TESTBED_ENV="RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun LOSS_RUNS=$(LOSS_RUNS) LOSS_RATES=$(LOSS_RATES)" \
		testbed/run.sh -- $(CURDIR)/testbed/loss-compare.sh

# The round trip at each position after a run's start on a kept session,
# and short runs by their warm-up against bench's long ones, beside
# perftest's round trips by position: what a probe's mean is made of
# (docs/measurements.md, Probe cost). Minutes of VM time.
.PHONY: run-start-latency
run-start-latency: testbed-build $(TESTBIN)/peer.testbed.test $(TESTBIN)/rdmarun
	TESTBED_ENV="RUN_START_LATENCY=1 RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun" \
		testbed/gotest.sh $(TESTBIN)/peer.testbed.test peer -test.run '^TestRunStartLatency$$' -test.timeout 30m

# What the exporter costs while it probes (CPU from /proc, mean RTT against
# rdmarun bench), a table for docs/measurements.md; minutes of VM time, so
# not part of testbed-test. PROBE_COST_BASELINE=/path/to/rdmarun_exporter
# interleaves another build's rows for a before and after; PROBE_COST_CASES
# picks rows (targets/mode/interval, comma-separated: 4/busy_poll/1s; targets
# "pair": two exporters probing each other, each with its own responder, so a
# baseline from before `rdmarun serve` answers its own probes) and
# PROBE_COST_ROUNDS measures each that many times, the builds in turn.
.PHONY: exporter-cost
exporter-cost: testbed-build $(TESTBIN)/exporter/e2e.testbed.test $(TESTBIN)/rdmarun $(TESTBIN)/rdmarun_exporter
	TESTBED_TIMEOUT=3600 TESTBED_ENV="PROBE_COST=1 PROBE_COST_BASELINE=$(PROBE_COST_BASELINE) PROBE_COST_WINDOW=$(PROBE_COST_WINDOW) \
		PROBE_COST_CASES=$(PROBE_COST_CASES) PROBE_COST_ROUNDS=$(PROBE_COST_ROUNDS) RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun RDMARUN_EXPORTER_BIN=$(CURDIR)/$(TESTBIN)/rdmarun_exporter" \
		testbed/gotest.sh $(TESTBIN)/exporter/e2e.testbed.test exporter/e2e -test.run '^TestProbeCost$$' -test.timeout 60m

# examples/slurm/fleet.sbatch, submitted to a real Slurm (munged,
# slurmctld, a slurmd per host) started inside the VM with 4 hosts.
.PHONY: slurm-test
slurm-test: testbed-build $(TESTBIN)/rdmarun
	testbed/slurm-test.sh $(TESTBIN)/rdmarun

$(TESTBIN)/rdmarun: FORCE
	@mkdir -p $(TESTBIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $@ ./cmd/rdmarun

$(TESTBIN)/rdmarun_exporter: FORCE
	@mkdir -p $(TESTBIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $@ ./cmd/rdmarun_exporter

$(TESTBIN)/compare: FORCE
	@mkdir -p $(TESTBIN)
	$(GO) build -o $@ ./testbed/compare

# Preloaded into perftest's -R clients by compare (why: its source).
$(TESTBIN)/cmsource.so: testbed/cmsource/cmsource.c
	@mkdir -p $(TESTBIN)
	$(CC) -Wall -Wextra -O2 -shared -fPIC -o $@ $< -ldl

# On a host with an active RDMA device the demo runs there; otherwise in
# the soft-RoCE VM, between rxe1 and rxe0.
demo: $(TESTBIN)/rdmarun
	testbed/demo.sh $(TESTBIN)/rdmarun

COMPARE_ARGS ?= --lat-iters 1000 --bw-iters 1000 --pairs 5 --siw
compare: testbed-build $(TESTBIN)/rdmarun $(TESTBIN)/compare $(TESTBIN)/cmsource.so
	TESTBED_SIW=1 testbed/run.sh --timeout $(TESTBED_TIMEOUT) -- $(TESTBIN)/compare --rdmarun $(TESTBIN)/rdmarun --cm-source $(CURDIR)/$(TESTBIN)/cmsource.so $(COMPARE_ARGS)

# Release artifacts, all in dist/ and all with the version from git: both
# binaries, the deb and rpm of both packages, the container image (made
# from the same binaries) and the Helm chart. nfpm runs from tools/, the
# module that pins it, so its config paths are relative to tools/.
PKG_BUILD   := $(CACHE)/pkg
PKG_ARCH    := $(shell $(GO) env GOARCH)
PKG_VERSION  = $(shell packaging/nfpm/pkgversion.sh '$(VERSION)' $$(git rev-list --count HEAD 2>/dev/null || echo 0))
NFPM        := $(GO) -C tools tool nfpm
.PHONY: dist dist-packages dist-chart package-test packages-test
dist: dist-packages image dist-chart

dist-packages:
	@mkdir -p dist $(PKG_BUILD)/man
	rm -f dist/rdmarun_*.deb dist/rdmarun-exporter_*.deb dist/rdmarun-*.rpm dist/rdmarun-exporter-*.rpm
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/ ./cmd/rdmarun ./cmd/rdmarun_exporter
	packaging/nfpm/manpage.sh dist/rdmarun '$(VERSION)' $(PKG_BUILD)/man/rdmarun.1.gz
	packaging/nfpm/manpage.sh dist/rdmarun_exporter '$(VERSION)' $(PKG_BUILD)/man/rdmarun_exporter.1.gz
	set -e; v='$(PKG_VERSION)'; for p in rdmarun rdmarun-exporter; do for f in deb rpm; do \
		PKG_VERSION=$$v PKG_ARCH=$(PKG_ARCH) $(NFPM) package --config ../packaging/nfpm/$$p.yaml \
			--packager $$f --target ../dist/; \
	done; done

# The chart's version is the packages' (SemVer with build metadata); its
# appVersion, the image tag it deploys by default, is the image's.
dist-chart:
	@mkdir -p dist
	rm -f dist/rdmarun-*.tgz
	$(GO) -C tools tool helm package ../packaging/helm/rdmarun --destination ../dist \
		--version '$(PKG_VERSION)' --app-version '$(VERSION)'

# Everything offline that proves the release: the packages (contents,
# units, a real install, the installed daemons in the VM, a purge), the
# image (validated, and its own binaries and libibverbs run in the VM) and
# the chart (lint, strict decoding, security settings, schema). Needs root.
package-test: packages-test image-test helm-test

# Checks the packages' contents, units and scripts, installs the debs on
# this machine, runs the installed daemons in the testbed VM, and purges
# them. Needs root, dpkg, rpm, apt-get, systemd-analyze and shellcheck.
packages-test: dist-packages testbed-build
	VERSION='$(VERSION)' REVISION='$(REVISION)' packaging/test/packages.sh

clean:
	rm -rf $(BIN) $(CACHE)/bin $(CACHE)/testbed/runs $(PKG_BUILD) dist

FORCE:

# --- Container image (packaging/container) -----------------------------------
# Built without a container engine: Debian's packages unpacked into a root
# file system, packed by crane into dist/rdmarun-image.tar. Needs root and
# apt-get. image-test validates the tarball, holds the Dockerfile to it, and
# runs the image's exporter against its rdmarun serve in the soft-RoCE VM.
.PHONY: image image-test
image: dist-packages
	VERSION='$(VERSION)' REVISION='$(REVISION)' BIN_DIR=dist GO='$(GO)' packaging/container/build-image.sh

image-test: image testbed-build
	VERSION='$(VERSION)' REVISION='$(REVISION)' GO='$(GO)' TESTBED_TIMEOUT=150 packaging/container/test-image.sh

# --- Helm chart (packaging/helm, packaging/kubernetes) -----------------------
# The chart packaging/helm/rdmarun and the plain manifests rendered from it
# (packaging/kubernetes). The checks live in the module packaging/validate,
# so the Kubernetes, prometheus-operator and Grafana libraries stay out of
# the main go.mod; helm is the one pinned in tools/go.mod.
HELM_CHART    := packaging/helm/rdmarun
HELM_VALIDATE := packaging/validate

.PHONY: helm-test helm-refresh helm-manifests

# helm lint --strict, strict decoding of every render for two Kubernetes
# versions, the DaemonSet's security settings, the values schema, rules
# and dashboards equal to their sources, the dashboards through the
# Grafana SDK, the rendered config through --config.check, the fleet
# Job's scenario through rdmarun validate, and the plain manifests equal
# to a fresh render.
# helm is built here, not inside the test, so a cold build (minutes) does
# not count against the test's timeout.
helm-test: $(TESTBIN)/rdmarun_exporter $(TESTBIN)/rdmarun
	cd $(HELM_VALIDATE) && $(GO) vet ./...
	helm=$$($(GO) -C tools tool -n helm) && cd $(HELM_VALIDATE) && \
		HELM=$$helm RDMARUN_EXPORTER_BIN=$(CURDIR)/$(TESTBIN)/rdmarun_exporter \
		RDMARUN_BIN=$(CURDIR)/$(TESTBIN)/rdmarun $(GO) test -count=1 -timeout 15m ./...

# After a change to prometheus/rules, dashboards or LICENSE: the chart's
# copies (a chart cannot read files outside its directory), then the
# manifests.
helm-refresh:
	rm -f $(HELM_CHART)/files/rules/*.yml $(HELM_CHART)/files/dashboards/*.json
	cp prometheus/rules/*.yml $(HELM_CHART)/files/rules/
	cp dashboards/*.json $(HELM_CHART)/files/dashboards/
	cp LICENSE $(HELM_CHART)/LICENSE
	$(MAKE) helm-manifests

# After a change to the chart: render packaging/kubernetes/*.yaml again.
helm-manifests:
	helm=$$($(GO) -C tools tool -n helm) && cd $(HELM_VALIDATE) && \
		HELM=$$helm $(GO) test -count=1 -timeout 15m -run 'TestManifestsMatchChart$$' . -update

