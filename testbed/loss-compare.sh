#!/bin/sh
# rdmarun against perftest on a lossy but working path, run as root inside
# the testbed VM (make loss-compare). For each loss rate, op and QP count,
# LOSS_RUNS runs of each, interleaved: rdmarun bench (defaults, event mode,
# 64 KiB bandwidth, 100 messages per QP), the same with --retry-cnt 7
# --cq-mod 8 --timeout 14 (perftest's retry count, which soft-RoCE
# retries forever, and ACK timeout, 67 ms: at rdmarun's 0.54 s each lost
# tail packet or ACK costs 8 times longer; and a completion every 512 KiB,
# so that a slow wait fits the stall rule's minute), and ib_<op>_bw with
# the same size, count and QPs; with
# each the median seconds of the runs that passed. rdmarun's defaults may
# give up on a lossy path (a dead peer must still end in seconds), but
# the error must then name the loss; a failure that says "did not
# acknowledge" or "peer gone" blames a path that only drops packets.
#
#   env: RDMARUN_BIN (required), LOSS_RUNS (default 6), LOSS_RATES
#        (percent, comma separated, default 2,5)
set -u

bin=${RDMARUN_BIN:?set RDMARUN_BIN to the rdmarun binary}
runs=${LOSS_RUNS:-6}
rates=$(echo "${LOSS_RATES:-2,5}" | tr , " ")
fault=$(dirname "$0")/fault.sh
counters=/sys/class/infiniband/rxe1/ports/1/hw_counters

"$bin" serve --listen 10.0.0.1:18520 --device rxe0 --allow-unauthenticated >/tmp/loss-serve.log 2>&1 &
serve=$!
trap '"$fault" clear >/dev/null 2>&1; kill $serve 2>/dev/null' EXIT
# Wait (30 s at most) for the responder to listen, so a slow start is not
# counted as an rdmarun failure.
n=0
until timeout 2 bash -c ": </dev/tcp/10.0.0.1/18520" 2>/dev/null; do
    n=$((n + 1))
    [ "$n" -le 30 ] || { echo "loss-compare: rdmarun serve did not listen within 30 s" >&2; exit 2; }
    sleep 1
done

# now prints seconds since the epoch with nanoseconds.
now() { date +%s.%N; }
# median prints the median of its arguments, or "-" when there are none.
median() {
    [ $# -gt 0 ] || { echo -; return; }
    printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f", m }'
}

# bench runs one rdmarun bench with the extra flags in $@, and says in
# $result whether it passed, and in $took how long it took.
bench() {
    began=$(now)
    if timeout 200 "$bin" bench --peer 10.0.0.1:18520 --device rxe1 --op "$op" \
        --measure bandwidth --sizes 64KiB --iters 100 --qps "$qps" --mode event \
        "$@" >/tmp/loss-bench.log 2>&1; then
        result=pass
    else
        result=fail
    fi
    took=$(echo "$(now) $began" | awk '{ printf "%.1f", $1 - $2 }')
}

for rate in $rates; do
    "$fault" path-loss 1 0 "$rate" both || exit 2
    for op in write send; do
        for qps in 1 4; do
            ok=0 failed=0 blamed=0 tok=0 tfailed=0 pok=0 pfailed=0 i=0
            secs="" tsecs="" psecs=""
            while [ "$i" -lt "$runs" ]; do
                i=$((i + 1))
                bench
                if [ "$result" = pass ]; then
                    ok=$((ok + 1)) secs="$secs $took"
                else
                    failed=$((failed + 1))
                    line=$(grep -E ": error: |stalled" /tmp/loss-bench.log | head -1)
                    echo "rdmarun failed: loss $rate% $op qps $qps run $i:"
                    echo "$line"
                    case "$line" in
                    *"did not acknowledge"* | *"peer gone"*) blamed=$((blamed + 1)) ;;
                    esac
                fi
                bench --retry-cnt 7 --cq-mod 8 --timeout 14
                if [ "$result" = pass ]; then
                    tok=$((tok + 1)) tsecs="$tsecs $took"
                else
                    tfailed=$((tfailed + 1))
                    echo "rdmarun (retry_cnt 7, cq_moderation 8, timeout 14) failed: loss $rate% $op qps $qps run $i:"
                    grep -E ": error: |stalled" /tmp/loss-bench.log | head -1
                fi
                "ib_${op}_bw" -d rxe0 -x 1 -q "$qps" -s 65536 -n 100 >/tmp/loss-perftest-server.log 2>&1 &
                server=$!
                sleep 1
                began=$(now)
                if timeout 200 "ib_${op}_bw" -d rxe1 -x 1 -q "$qps" -s 65536 -n 100 10.0.0.1 \
                    >/tmp/loss-perftest.log 2>&1; then
                    pok=$((pok + 1))
                    psecs="$psecs $(echo "$(now) $began" | awk '{ printf "%.1f", $1 - $2 }')"
                else
                    pfailed=$((pfailed + 1))
                    echo "perftest failed: loss $rate% $op qps $qps run $i:"
                    tail -3 /tmp/loss-perftest.log
                fi
                kill "$server" 2>/dev/null
                wait "$server" 2>/dev/null
            done
            # shellcheck disable=SC2086 # one time a word
            echo "loss $rate% $op qps $qps: rdmarun $ok passed $failed failed ($blamed blaming the peer), median $(median $secs) s;" \
                "rdmarun retry_cnt 7 cq_moderation 8 timeout 14 $tok passed $tfailed failed, median $(median $tsecs) s;" \
                "perftest $pok passed $pfailed failed, median $(median $psecs) s;" \
                "rxe1 rcvd_seq_err $(cat $counters/rcvd_seq_err) completer_retry_err $(cat $counters/completer_retry_err) (cumulative)"
        done
    done
done
