#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# tests/e2e/all.sh JOBS EGRESSCTL SUITE...: runs the end-to-end suites,
# JOBS at a time, in the order given (the Makefile lists the longest
# first). Each suite's output goes to a file and is printed whole when it
# ends, with "# e2e SUITE: N s"; the last line names every suite that
# failed, and the exit status is 1 if any did.
#
# Two names are not files here: "stress" is tests/stress/stress.sh with
# STRESS_QUICK=1, and "stress-asan" its fault cases against
# $E2E_ASAN_EGRESSCTL (an ASan+UBSan build), as make stress-check runs them.
#
# Every suite makes its own namespaces, cgroups, pins and users, named
# after its PID, so two can run side by side. The ones that add or remove
# users and groups, or use the system's own paths and the package's group
# (SERIAL below), never run at the same time as each other.
#
#   E2E_LOGS=DIR   keep each suite's output in DIR/SUITE.log (default: a
#                  temporary directory, removed at the end)
set -u

if [ $# -lt 3 ]; then
	echo "usage: $0 JOBS EGRESSCTL SUITE..." >&2
	exit 2
fi
JOBS=$1 EGR=$2
shift 2
case $JOBS in '' | *[!0-9]* | 0) echo "$0: JOBS must be a number >= 1, not '$JOBS'" >&2 && exit 2 ;; esac
HERE=$(dirname "$0")

SERIAL=" ci cisudo docker containers nosudo package service stress "

if [ -n "${E2E_LOGS:-}" ]; then
	LOGS=$E2E_LOGS
	mkdir -p "$LOGS" || exit 2
else
	LOGS=$(mktemp -d /tmp/egr-e2e-logs.XXXXXX) || exit 2
	trap 'rm -rf "$LOGS"' EXIT
fi

declare -A SUITE_OF=() T0=()
QUEUE=("$@")
FAILED=
SERIAL_BUSY=

# A signal ends the running suites through their own traps (which clean
# up what they made), then this script.
stop() {
	local p
	for p in "${!SUITE_OF[@]}"; do kill -TERM "$p" 2>/dev/null; done
	wait
	echo "e2e: interrupted (SIG$1)"
	exit "$2"
}
trap 'stop INT 130' INT
trap 'stop TERM 143' TERM
trap 'stop HUP 129' HUP

# run_suite NAME: runs one suite, its output on stdout
run_suite() {
	case $1 in
	stress) STRESS_QUICK=1 exec "$HERE/../stress/stress.sh" "$EGR" ;;
	stress-asan)
		if [ -z "${E2E_ASAN_EGRESSCTL:-}" ]; then
			echo "stress-asan: E2E_ASAN_EGRESSCTL names no ASan build"
			return 1
		fi
		STRESS_QUICK=1 STRESS_FAULTS_ONLY=1 exec "$HERE/../stress/stress.sh" "$E2E_ASAN_EGRESSCTL"
		;;
	*) exec "$HERE/$1.sh" "$EGR" ;;
	esac
}

# start_next: starts the first queued suite that may start now; 1 if none
start_next() {
	local i s
	for i in "${!QUEUE[@]}"; do
		s=${QUEUE[$i]}
		if [[ $SERIAL == *" $s "* ]]; then
			[ -n "$SERIAL_BUSY" ] && continue
			SERIAL_BUSY=$s
		fi
		unset "QUEUE[$i]"
		QUEUE=("${QUEUE[@]}")
		run_suite "$s" >"$LOGS/$s.log" 2>&1 </dev/null &
		SUITE_OF[$!]=$s
		T0[$s]=$(date +%s)
		return 0
	done
	return 1
}

while [ ${#QUEUE[@]} -gt 0 ] || [ ${#SUITE_OF[@]} -gt 0 ]; do
	while [ ${#SUITE_OF[@]} -lt "$JOBS" ] && start_next; do :; done
	pid=
	wait -n -p pid
	rc=$?
	[ -n "$pid" ] || continue
	s=${SUITE_OF[$pid]}
	unset "SUITE_OF[$pid]"
	[ "$SERIAL_BUSY" = "$s" ] && SERIAL_BUSY=
	case $s in stress*) echo "== tests/stress/stress.sh ($s)" ;; *) echo "== tests/e2e/$s.sh" ;; esac
	cat "$LOGS/$s.log"
	[ "$rc" = 0 ] || FAILED="$FAILED $s"
	echo "# e2e $s: $(($(date +%s) - T0[$s])) s"
done

if [ -n "$FAILED" ]; then
	echo "e2e: failed:$FAILED"
	exit 1
fi
echo "e2e: every suite passed"
