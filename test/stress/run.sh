#!/bin/bash
# make stress: the gate's kill -9 tests, many times in parallel (issue 24
# item 6). Not part of `make test` nor of CI's critical path: a race that
# shows once in tens of runs under load (the recovery race of docs/gate.md)
# needs many runs at once, not one.
#
# Builds bin/fedmem and the gate's test binary once into a work directory,
# then runs STRESS_TESTS (a -test.run pattern; default the kill -9 burst)
# STRESS_N times, STRESS_P at a time, each under nice -n STRESS_NICE with
# its own FEDMEM_TEST_SEED (STRESS_SEED, STRESS_SEED+1, …; STRESS_SEED
# defaults to the clock) and its own TMPDIR. Prints one line per failed run
# with the seed that replays it and its log, then a summary; exits 1 when a
# run failed. The work directory (logs of failed runs) is kept when one
# failed, removed otherwise; STRESS_KEEP=1 keeps it always.
#
# Replay one failure:
#   FEDMEM_TEST_SEED=<seed> FEDMEM_BIN=$PWD/bin go test -count=1 \
#     -run '^TestGateRunKillNineBurst$' ./gate/
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${STRESS_N:-40}
p=${STRESS_P:-4}
tests=${STRESS_TESTS:-^TestGateRunKillNineBurst\$}
seed0=${STRESS_SEED:-$(date +%s)}
niceness=${STRESS_NICE:-10}
timeout=${STRESS_TIMEOUT:-15m}
go=${GO:-go}

log() { printf 'stress: %s\n' "$*" >&2; }
for v in "$n" "$p" "$seed0" "$niceness"; do
	case $v in '' | *[!0-9-]*) log "STRESS_N, STRESS_P, STRESS_SEED and STRESS_NICE must be integers (got '$v')"; exit 2 ;; esac
done
[ "$n" -ge 1 ] && [ "$p" -ge 1 ] || { log "STRESS_N and STRESS_P must be at least 1"; exit 2; }

# Short names: a test's review socket lives under TMPDIR, and a unix
# socket path holds at most 107 bytes (TestGateRunKillNineBatchApproval
# failed every run under the longer fedmem-stress.XXXXXX/tmp-N: 109).
work=$(mktemp -d "${TMPDIR:-/tmp}/fms.XXXXXX")
keep=${STRESS_KEEP:-0}
finish() {
	if [ "$keep" = 1 ]; then log "work directory kept: $work"; else rm -rf "$work"; fi
}
trap finish EXIT

log "building bin/fedmem and the gate test binary into $work"
mkdir -p "$work/bin"
(cd "$root" && CGO_ENABLED=0 "$go" build -o "$work/bin/fedmem" ./cmd/fedmem)
(cd "$root" && CGO_ENABLED=0 "$go" test -c -o "$work/gate.test" ./gate/)

# one run: its exit status in $work/run-I.rc, its output in run-I.log.
one() {
	local i=$1 seed=$((seed0 + $1)) tmp="$work/$1"
	mkdir -p "$tmp"
	set +e
	(cd "$root/gate" && TMPDIR=$tmp FEDMEM_BIN=$work/bin FEDMEM_TEST_SEED=$seed \
		nice -n "$niceness" "$work/gate.test" -test.run "$tests" -test.count=1 \
		-test.timeout "$timeout" -test.v) >"$work/run-$i.log" 2>&1
	echo $? >"$work/run-$i.rc"
	set -e
	rm -rf "$tmp"
}

log "running '$tests' $n times, $p at a time (seeds $seed0..$((seed0 + n - 1)))"
t0=$(date +%s)
running=0
for ((i = 0; i < n; i++)); do
	one "$i" &
	running=$((running + 1))
	if [ "$running" -ge "$p" ]; then
		wait -n || true
		running=$((running - 1))
	fi
done
wait || true

fails=0
for ((i = 0; i < n; i++)); do
	rc=$(cat "$work/run-$i.rc" 2>/dev/null || echo missing)
	if [ "$rc" != 0 ] || ! grep -q '^--- PASS' "$work/run-$i.log"; then
		fails=$((fails + 1))
		keep=1
		# the first failure line: not the seed's, not a kill round's log
		first=$(grep -E '_test\.go:[0-9]+:|^panic:|timed out' "$work/run-$i.log" |
			grep -v -E 'replays it\)$|: round [0-9]+: killed at' | head -1 | sed 's/^[[:space:]]*//' || true)
		log "FAIL run $i: FEDMEM_TEST_SEED=$((seed0 + i)) (exit $rc) log $work/run-$i.log: ${first:-see the log}"
	fi
done
log "$((n - fails)) of $n runs passed, $fails failed, in $(($(date +%s) - t0))s ('$tests', $p at a time)"
[ "$fails" = 0 ]
