#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A check of the VM harness, not of blkcache, and not run by tests/vm/run:
#	scripts/vm -- tests/vm/tcg-text-patch.sh [N]
# Switches a scheduler tracepoint on and off N times (default 2000) from a
# task pinned to CPU 1 while CPU 0 idles.  Each switch patches kernel text
# the other vCPU runs (text_poke_bp).  QEMU 7.2's multi-threaded TCG then
# runs stale code: the guest hangs looping in exc_int3 or oopses within
# 5-90 s.  Single-threaded TCG and QEMU 10 finished, and both CPUs still
# took timer interrupts.  scripts/vm's check of text patched while more
# than one CPU is online fails the run even when the guest survives.  See
# testing.rst, "QEMU and TCG".
. "$BKC_REPO/tests/vm/lib.sh"

n=${1:-2000}
[[ $n =~ ^[1-9][0-9]*$ ]] || fail "usage: tcg-text-patch.sh [N]"
[ "$(nproc)" -ge 2 ] || fail "needs two vCPUs (scripts/vm --smp 2)"
tracing=/sys/kernel/tracing
[ -e "$tracing/events" ] || mount -t tracefs none "$tracing" ||
	fail "cannot mount tracefs"
ev=$tracing/events/sched/sched_switch/enable
[ -w "$ev" ] || fail "$ev missing"

taskset -pc 1 $$ >/dev/null || fail "taskset failed"
log "switching sched_switch $n times from CPU 1"
t0=$SECONDS
for ((i = 0; i < n; i++)); do
	echo 1 >"$ev"
	echo 0 >"$ev"
done
log "done in $((SECONDS - t0))s"
# a timer on each CPU must fire (an idle CPU may take no tick for
# seconds, so its tick count proves nothing)
for c in 0 1; do
	timeout 10 taskset -c "$c" /bin/sleep 1 ||
		fail "a 1 s sleep on CPU $c did not end within 10 s"
done
log "timers fire on both CPUs"
