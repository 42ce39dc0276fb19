# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# tests/vm/lib.sh - helpers for guest tests run by scripts/vm.
#
# A guest test starts with
#	. "$BKC_REPO/tests/vm/lib.sh"
# which turns on `set -euo pipefail` and installs an EXIT trap that runs the
# cleanups registered with on_exit, saves dmesg into $BKC_RESULTS and fails
# the test if the kernel log shows a BUG, an oops, a WARNING or a call trace.
#
# Environment from scripts/vm: BKC_HDDS BKC_SSD BKC_SCRATCH BKC_REPO
# BKC_RESULTS BKC_KVER BKC_KO BKC_TEXT_POKE.
#
# Whatever patches kernel text (a module's init, a tracepoint's switch,
# some device-mapper tables) runs through one_cpu: scripts/vm fails a run
# that patched text with two CPUs online.  Load modules with need_module,
# not through the kernel's auto-loading (mdadm, dmsetup, mount).

set -euo pipefail

: "${BKC_REPO:?not in a blkcache VM (run it with scripts/vm)}"
: "${BKC_RESULTS:?not in a blkcache VM (run it with scripts/vm)}"

BKC_TEST=${BKC_TEST:-$(basename "$0" .sh)}
# scripts/vm passes a copy of the module taken when the VM started.
BKC_KO=${BKC_KO:-$BKC_REPO/drivers/blkcache/blkcache.ko}
# shellcheck disable=SC2034  # for the tests
make_cache=$BKC_REPO/tools/make-cache/make-cache
BKC_MD=/dev/md0

# Without udev in the guest, libdevmapper must create the /dev/mapper nodes.
export DM_DISABLE_UDEV=1

# sleep as a bash builtin (bash-builtins, from scripts/install-deps): the
# tests poll, and under TCG each exec of /bin/sleep costs ~0.15 s.
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true

log() {
	printf '[%(%T)T] %s: %s\n' -1 "$BKC_TEST" "$*"
}

# io_state: where the I/O of a hang sits: requests in flight per disk,
# the blk-mq queues' busy requests and the interrupt counts per CPU.
io_state() {
	local d
	grep -H . /sys/block/*/inflight 2>/dev/null | grep -v ':  *0  *0$'
	[ -d /sys/kernel/debug/block ] ||
		mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
	for d in /sys/kernel/debug/block/*/hctx*; do
		# debugfs files have no size: read them
		[ -n "$(cat "$d/busy" "$d/dispatch" 2>/dev/null)" ] || continue
		echo "$d: state $(cat "$d/state" 2>/dev/null)"
		sed 's/^/  busy /' "$d/busy" 2>/dev/null | head -n 5
		sed 's/^/  dispatch /' "$d/dispatch" 2>/dev/null | head -n 5
		timeout 5 grep -E '^(nr_tags|active_queues|busy|cleared)' "$d/tags" 2>/dev/null |
			sed 's/^/  /'
	done
	grep -E 'CPU|virtio|LOC|CAL|RES' /proc/interrupts
}

fail() {
	printf 'FAIL: %s: %s\n' "$BKC_TEST" "$*" >&2
	exit 1
}

# Runs "$@" and fails the test with its output if it does not fail.
must_fail() {
	local out
	if out=$("$@" 2>&1); then
		printf '%s\n' "$out" >&2
		fail "expected failure: $*"
	fi
}

# on_exit CMD...: run CMD (a string, eval'ed) when the test exits, last
# registered first.  Cleanup failures are reported but do not mask the
# test's own status.
BKC_ON_EXIT=()
on_exit() {
	BKC_ON_EXIT=("$*" "${BKC_ON_EXIT[@]}")
}

# dmesg_has PATTERN: the kernel log has a line matching the grep regex.
# Not `dmesg | grep -q`: under pipefail, grep -q exits at its first match,
# dmesg dies of SIGPIPE if it is still writing, and the pipeline fails
# although the line is there.  Pipelines into grep here read all input.
dmesg_has() {
	dmesg | grep -e "$1" >/dev/null
}

# check_dmesg: fails (returns 1) if the kernel log shows a BUG, an oops, a
# WARNING, a call trace or a hung task, printing the offending lines.
check_dmesg() {
	local bad
	bad=$(dmesg | grep -E 'BUG:|Oops|WARNING:|Call Trace|blocked for more than' || true)
	[ -z "$bad" ] && return 0
	printf 'FAIL: %s: kernel log shows:\n%s\n' "$BKC_TEST" "$bad" >&2
	return 1
}

# shellcheck disable=SC2317  # runs from the EXIT trap
bkc_on_exit() {
	local rc=$? c
	set +e
	trap - EXIT
	for c in "${BKC_ON_EXIT[@]}"; do
		eval "$c" || log "cleanup failed: $c"
	done
	dmesg >"$BKC_RESULTS/dmesg-$BKC_TEST.txt" 2>&1
	check_dmesg || { [ "$rc" != 0 ] || rc=1; }
	if [ "$rc" = 0 ]; then
		log PASS
	else
		log "FAILED (status $rc)"
	fi
	exit "$rc"
}
trap bkc_on_exit EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# wait_for PATH [TIMEOUT]: wait until PATH exists (default 10 s).
wait_for() {
	local path=$1 t=${2:-10} i
	for ((i = 0; i < t * 10; i++)); do
		[ -e "$path" ] && return 0
		sleep 0.1
	done
	fail "$path did not appear within ${t}s"
}

# wait_gone PATH [TIMEOUT]: wait until PATH no longer exists (default 10 s).
wait_gone() {
	local path=$1 t=${2:-10} i
	for ((i = 0; i < t * 10; i++)); do
		[ -e "$path" ] || return 0
		sleep 0.1
	done
	fail "$path still there after ${t}s"
}

# dmsetup without udev: no udev cookies, then create the /dev/mapper nodes.
dmsetup() {
	local rc=0
	command dmsetup --noudevsync --noudevrules "$@" || rc=$?
	command dmsetup mknodes >/dev/null 2>&1 || true
	return "$rc"
}

# Loads a kernel module, failing the test if it cannot be loaded.  With
# CPU 0 alone online (one_cpu): a module's init may switch a static key
# in text that runs (6.1's async_tx, which raid456 pulls in, does).
need_module() {
	local m
	for m in "$@"; do
		[ -d "/sys/module/${m//-/_}" ] && continue
		one_cpu modprobe "$m" || fail "modprobe $m failed"
	done
}

# bkc_load: load blkcache.ko from the tree and its in-tree dependencies.
# Already loaded is fine.
bkc_load() {
	local vermagic deps kver
	[ -d /sys/module/blkcache ] && return 0
	[ -f "$BKC_KO" ] || fail "blkcache.ko missing: run make on the host"
	kver=$(uname -r)
	vermagic=$(modinfo -F vermagic "$BKC_KO")
	[ "${vermagic%% *}" = "$kver" ] ||
		fail "blkcache.ko is built for ${vermagic%% *}, this VM runs $kver (make KVER=$kver)"
	deps=$(modinfo -F depends "$BKC_KO")
	if modinfo -F filename libcrc32c >/dev/null 2>&1; then
		deps+=${deps:+,}libcrc32c
	fi
	# shellcheck disable=SC2086  # split the comma list
	[ -z "$deps" ] || need_module ${deps//,/ }
	insmod "$BKC_KO" || fail "insmod $BKC_KO failed"
	wait_for /sys/module/blkcache 5
	log "blkcache loaded"
}

# bkc_unload: remove the module; fails the test if that is refused.
bkc_unload() {
	[ -d /sys/module/blkcache ] || return 0
	rmmod blkcache || fail "rmmod blkcache failed (refcnt $(cat /sys/module/blkcache/refcnt 2>/dev/null))"
	wait_gone /sys/module/blkcache 5
	log "blkcache unloaded"
}

# make_raid5 [CHUNK_KiB [MEMBER...]]: md RAID5 over the three HDDs (or
# the three MEMBERs) as /dev/md0 (metadata 1.2, chunk 64 KiB by default,
# no initial resync).
make_raid5() {
	local chunk=${1:-64} hdds
	need_module raid456
	if [ $# -gt 1 ]; then
		hdds=("${@:2}")
	else
		read -r -a hdds <<<"$BKC_HDDS"
	fi
	[ "${#hdds[@]}" = 3 ] || fail "expected 3 RAID members, got '${hdds[*]}'"
	mdadm --create "$BKC_MD" --run --quiet --level=5 --raid-devices=3 \
		--assume-clean --metadata=1.2 --chunk="${chunk}K" "${hdds[@]}" \
		</dev/null || fail "mdadm --create failed"
	wait_for "$BKC_MD"
	wait_for /sys/block/md0/md/array_state
	log "RAID5 $BKC_MD over ${hdds[*]}, chunk ${chunk}K," \
		"$(($(cat /sys/block/md0/size) / 2048)) MiB"
}

# stop_raid [--zero]: stop /dev/md0; with --zero also wipe the members'
# md superblocks.
stop_raid() {
	local hdds
	[ -e /sys/block/md0 ] || return 0
	mdadm --stop "$BKC_MD" || fail "mdadm --stop $BKC_MD failed"
	if [ "${1:-}" = --zero ]; then
		read -r -a hdds <<<"$BKC_HDDS"
		mdadm --zero-superblock "${hdds[@]}" || fail "mdadm --zero-superblock failed"
	fi
}

# disk_stat FIELD DEV...: diskstats field FIELD (1-based, as in the
# kernel's iostats.rst: 1 reads, 3 sectors read, 5 writes, 16 flushes)
# summed over the devices (/dev/X, X, or a link to one).
disk_stat() {
	local field=$1 d n=0 dstat
	shift
	for d in "$@"; do
		read -r -a dstat <"/sys/block/$(basename "$(readlink -f "$d")")/stat"
		n=$((n + dstat[field - 1]))
	done
	echo "$n"
}

# dev_bytes DEV: size of a block device in bytes.
dev_bytes() {
	blockdev --getsize64 "$1"
}

# one_cpu CMD...: run CMD with every CPU but CPU 0 offline, then bring
# them back; returns CMD's status, or 1 if a CPU would not go offline (CMD
# is then not run) or come back.  For whatever patches kernel text (a
# tracepoint's switch): QEMU 7.2's multi-threaded TCG runs stale code on a
# vCPU that runs while another patches it, and scripts/vm fails a run in
# which that happened (testing.rst, "QEMU and TCG").  It does not call
# fail: it also runs from on_exit.  CMD runs with set -e off.
one_cpu() {
	local c o offlined=() rc=0
	for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[ -e "$c" ] || continue
		read -r o <"$c"
		[ "$o" = 1 ] || continue
		if ! echo 0 >"$c"; then
			log "cannot take ${c%/online} offline"
			rc=1
			break
		fi
		offlined+=("$c")
	done
	if [ "$rc" = 0 ]; then
		"$@" || rc=$?
	fi
	for c in "${offlined[@]}"; do
		echo 1 >"$c" || { log "cannot bring ${c%/online} online"; rc=1; }
	done
	return "$rc"
}

# event_enable DIR 0|1: switch the trace event(s) under tracefs's DIR.
event_enable() {
	echo "$2" >"$1/enable"
}

# trace_on EVENT KB: record blkcache's tracepoint EVENT (every one of them
# if EVENT is "all") from now on, in a fresh buffer of KB KiB per CPU;
# mounts tracefs if needed.  trace_off stops it and prints the trace.
TR=/sys/kernel/tracing
trace_on() {
	local ev=$TR/events/blkcache/$1
	[ "$1" != all ] || ev=$TR/events/blkcache
	[ -d "$TR/events" ] || mount -t tracefs nodev "$TR" ||
		fail "cannot mount tracefs"
	[ -d "$ev" ] || fail "no tracepoint blkcache:$1 in $TR/events"
	echo 0 >"$TR/tracing_on"
	echo "$2" >"$TR/buffer_size_kb"
	: >"$TR/trace"
	one_cpu event_enable "$ev" 1 || fail "cannot switch on $ev"
	# (blkcache may be unloaded by then, its events gone with it)
	on_exit "[ ! -e $ev/enable ] || one_cpu event_enable $ev 0; echo 0 >$TR/tracing_on"
	echo 1 >"$TR/tracing_on"
}

# trace_off EVENT: stop recording EVENT (as given to trace_on); print what
# was recorded, without tracefs's comment lines, and clear the buffer.
trace_off() {
	local ev=$TR/events/blkcache/$1
	[ "$1" != all ] || ev=$TR/events/blkcache
	echo 0 >"$TR/tracing_on"
	one_cpu event_enable "$ev" 0 || fail "cannot switch off $ev"
	grep -v '^#' "$TR/trace" || true
	: >"$TR/trace"
}
