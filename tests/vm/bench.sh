#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/vm/bench.sh - guest side of scripts/bench (run it through
# scripts/bench, not tests/vm/run: it is a benchmark, not a test).
#
#   bench.sh [--runtime SEC] [--drain-mib MIB] [--fill-cap SEC]
#            [--drain-cap SEC] [--configs cfg,cfg,...] [--cpu]
#
# --cpu runs only the two jobs whose guest CPU time per I/O is a figure
# (4k random writes QD8 and hot random reads QD8), in a boot of
# scripts/vm --icount, where guest time counts instructions: the figure
# is then thousands of instructions per I/O, a count the host's speed
# hardly moves.
#
# Runs the same fio/ioping jobs on each configuration in turn and appends
# one line per figure to $BKC_RESULTS/raw.csv:
#	config,metric,value,note
# value is a number, ">N" (a capped wait) or "n/a".  A configuration that
# cannot be set up records why and n/a; the others still run.  The host
# (scripts/bench) turns raw.csv into the table, the CSV and the chart.
# Configurations: see CONFIGS below.  Layout on every device under test:
#	[0, 256M)          random jobs (randwrite, randrw), background writer;
#	                   its first 64M written again, then randrw over it
#	[256M, 384M)       hot-read region, written sequentially just before
#	[384M, 384M+DRAIN) drain region (DRAIN <= 512M), fresh cache
#	[1G, 2G)           1 MiB sequential writes
#	[2G, 2G+128M)      region written by a 64k sequential stream (default
#	                   settings), then read at random
#	[2304M, 2304M+8*S) sparse drain region: S = DRAIN/4 of random 4k
#	                   writes spread over it, fresh cache
#	[3328M, 3840M)     never written through a cache: QD1 read misses
# A cache configuration's jobs with a raw reference run again on that
# reference right after (the twin_ figures): on the SSD's twin (a scratch
# disk) for the SSD, on md0 itself (reads only) for the misses.
. "$BKC_REPO/tests/vm/lib.sh"

CONFIGS=(raw-ssd raw-md0 bcache dm-writecache dm-cache blkcache-wb blkcache-wt)

RUNTIME=10
DRAIN_MIB=512
FILL_CAP=120
DRAIN_CAP=600
SELECTED=("${CONFIGS[@]}")

CPU_ONLY=
OUT=$BKC_RESULTS
RAW=$OUT/raw.csv
INFO=$OUT/configs.txt
ERRORS=$OUT/errors.txt
FIODIR=$OUT/fio
REASON_FILE=/tmp/bench-reason
BG_PID_FILE=/tmp/bench-bg.pid

MIB=$((1024 * 1024))
RAND_OFF=0
RAND_SIZE=$((256 * MIB))
WRITTEN_SIZE=$((64 * MIB))
HOT_OFF=$((256 * MIB))
HOT_SIZE=$((128 * MIB))
DRAIN_OFF=$((384 * MIB))
SEQ_OFF=$((1024 * MIB))
SEQ_SIZE=$((1024 * MIB))
SEQRAND_OFF=$((2048 * MIB))
SEQRAND_SIZE=$((128 * MIB))
SPARSE_OFF=$((2304 * MIB))
MISS_OFF=$((3328 * MIB))
MISS_SIZE=$((512 * MIB))
NEED_BYTES=$((MISS_OFF + MISS_SIZE))

# dm-cache geometry: metadata device size and cache block size (sectors).
DMC_META_MIB=32
DMC_BLOCK_SECTORS=64
# What the drains raise for bcache (sectors/s) and dm-cache (sectors).
BCACHE_RATE_MIN=1048576
DMC_MIGRATION_THRESHOLD=1048576

SSD=$BKC_SSD
MD=$BKC_MD
# The raw SSD's twin: the first scratch disk, as big as the SSD and as
# unthrottled (scripts/bench sizes it).  A cache configuration's jobs run
# on it too, each right after its own run, so that their ratio compares
# two figures taken seconds apart: the host's speed drifts during a run
# far more than between two neighbouring jobs (see the drift check).
TWIN=${BKC_SCRATCH%% *}
CFG=
DEV=
SET_UUID=
HAVE_MD=
INFO_OFF=
DRAIN_NA=
DRAIN_PID=

# lib.sh's fail() ends the whole script; here it ends only the subshell of
# the current configuration, after recording why.
fail() {
	printf 'bench: %s: %s\n' "${CFG:-setup}" "$*" >&2
	printf '%s\n' "$*" >"$REASON_FILE"
	exit 1
}

usage() {
	sed -n '4,8s/^# \{0,1\}//p' "$0"
}

parse_args() {
	local list c ok
	while [ $# -gt 0 ]; do
		case $1 in
		--runtime) RUNTIME=$2; shift 2 ;;
		--drain-mib) DRAIN_MIB=$2; shift 2 ;;
		--fill-cap) FILL_CAP=$2; shift 2 ;;
		--drain-cap) DRAIN_CAP=$2; shift 2 ;;
		--configs) IFS=, read -r -a SELECTED <<<"$2"; shift 2 ;;
		--cpu) CPU_ONLY=1; shift ;;
		*) usage >&2; fail "unknown argument '$1'" ;;
		esac
	done
	for c in RUNTIME DRAIN_MIB FILL_CAP DRAIN_CAP; do
		[[ ${!c} =~ ^[1-9][0-9]*$ ]] || fail "$c must be a positive integer"
	done
	[ "$DRAIN_MIB" -le 512 ] || fail "--drain-mib is at most 512"
	list=" ${CONFIGS[*]} "
	for c in "${SELECTED[@]}"; do
		ok=${list/ $c /}
		[ "$ok" != "$list" ] || fail "unknown configuration '$c'"
	done
}

# put METRIC VALUE [NOTE]: one figure of the current configuration.
put() {
	local note=${3:-}
	note=${note//,/;}
	printf '%s,%s,%s,%s\n' "$CFG" "$1" "$2" "$note" >>"$RAW"
	log "$CFG: $1 = $2${note:+ ($note)}"
}

# info TEXT: how the current configuration is set up (configs.txt).
info() {
	[ -n "$INFO_OFF" ] || printf '%s: %s\n' "$CFG" "$*" >>"$INFO"
	log "$CFG: $*"
}

error() {
	printf '%s: %s\n' "$CFG" "$*" >>"$ERRORS"
	log "$CFG: ERROR: $*"
}

now_us() {
	local t=$EPOCHREALTIME
	echo $((10#${t/./}))
}

# secs_since T0_US: elapsed seconds with one decimal.
secs_since() {
	local d=$(($(now_us) - $1))
	printf '%d.%d' $((d / 1000000)) $((d % 1000000 / 100000))
}

# Writes VALUE to a sysfs attribute, failing the configuration if refused.
sysfs_set() {
	echo "$2" >"$1" 2>/dev/null || fail "cannot write '$2' to $1"
}

# to_mib HUMAN: "0", "512", "1.5k", "20.0M", "1.2G" -> MiB (integer, rounded).
to_mib() {
	awk -v v="$1" 'BEGIN {
		m = 1; u = substr(v, length(v), 1)
		if (u ~ /[kKMGTP]/) { v = substr(v, 1, length(v) - 1) }
		if (u == "k" || u == "K") m = 1024
		if (u == "M") m = 1024 ^ 2
		if (u == "G") m = 1024 ^ 3
		if (u == "T") m = 1024 ^ 4
		if (v !~ /^[0-9]+(\.[0-9]+)?$/) { print "n/a"; exit }
		b = v * m
		if (b > 0 && b < 1024 * 1024) { print "<1"; exit }
		printf "%.0f\n", b / 1024 / 1024 }'
}

# ---------------------------------------------------------------------------
# Clean slate between configurations: every cache stopped, every signature
# gone.  Best effort, never fails.

teardown_all() {
	local d i pid
	# A background writer left by a configuration that failed.
	if [ -s "$BG_PID_FILE" ]; then
		read -r pid <"$BG_PID_FILE"
		kill "$pid" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		rm -f "$BG_PID_FILE"
	fi
	if [ -e /sys/block/bcache0/bcache/stop ]; then
		echo 1 >/sys/block/bcache0/bcache/stop 2>/dev/null || true
	fi
	for d in /sys/fs/bcache/*-*-*-*-*; do
		[ -d "$d" ] || continue
		echo 1 >"$d/unregister" 2>/dev/null || true
	done
	if [ -e /sys/block/cache0/cache/stop ]; then
		echo 1 >/sys/block/cache0/cache/stop 2>/dev/null || true
	fi
	for d in /sys/fs/blkcache/*-*-*-*-*; do
		[ -d "$d" ] || continue
		echo 1 >"$d/unregister" 2>/dev/null || true
	done
	for d in bkc-wc bkc-cache bkc-cmeta bkc-cdata; do
		[ -e "/dev/mapper/$d" ] || continue
		dmsetup remove --retry "$d" >/dev/null 2>&1 || log "cannot remove dm device $d"
	done
	# Stopping is asynchronous for bcache and blkcache.
	for ((i = 0; i < 300; i++)); do
		[ -e /sys/block/bcache0 ] || [ -e /sys/block/cache0 ] ||
			compgen -G '/sys/fs/bcache/*-*-*-*-*' >/dev/null ||
			compgen -G '/sys/fs/blkcache/*-*-*-*-*' >/dev/null || break
		sleep 0.1
	done
	[ "$i" -lt 300 ] || log "caches still present after 30s of teardown"
	wipe_dev "$SSD"
	[ -z "$HAVE_MD" ] || wipe_dev "$MD"
}

wipe_dev() {
	wipefs -a -q "$1" >/dev/null 2>&1 || log "wipefs $1 failed"
	dd if=/dev/zero of="$1" bs=1M count=16 oflag=direct status=none ||
		log "zeroing the start of $1 failed"
}

# ---------------------------------------------------------------------------
# Configurations.  setup_<cfg> sets DEV (and fails the configuration with
# the reason if it cannot); the hooks below do nothing where a
# configuration has no such knob.

setup_raw-ssd() {
	DEV=$SSD
	info "the SSD itself ($SSD, $(($(dev_bytes "$SSD") / MIB)) MiB)"
}

setup_raw-md0() {
	DEV=$MD
	info "md0: RAID5 over $BKC_HDDS, chunk $(($(cat /sys/block/md0/md/chunk_size) / 1024))K," \
		"$(($(dev_bytes "$MD") / MIB)) MiB"
}

bcache_attr() {
	echo "/sys/block/bcache0/bcache/$1"
}

setup_bcache() {
	local out i cset mode
	command -v make-bcache >/dev/null || fail "make-bcache missing (bcache-tools)"
	need_module bcache
	out=$(make-bcache --wipe-bcache -w 4k -b 512k --writeback -C "$SSD" -B "$MD" 2>&1) ||
		fail "make-bcache failed: $out"
	# No udev in the guest: register both devices by hand.
	echo "$SSD" >/sys/fs/bcache/register 2>/dev/null || fail "registering $SSD with bcache failed"
	echo "$MD" >/sys/fs/bcache/register 2>/dev/null || fail "registering $MD with bcache failed"
	wait_for /dev/bcache0 20
	for ((i = 0; i < 100; i++)); do
		[ -e "$(bcache_attr cache)" ] && break
		sleep 0.1
	done
	[ -e "$(bcache_attr cache)" ] || fail "bcache0 did not attach to its cache set"
	cset=$(basename "$(readlink -f "$(bcache_attr cache)")")
	sysfs_set "$(bcache_attr cache_mode)" writeback
	mode=$(<"$(bcache_attr cache_mode)")
	[[ $mode == *"[writeback]"* ]] || fail "bcache cache_mode is '$mode', not writeback"
	# TCG's latencies would otherwise trip bcache's congestion bypass.
	sysfs_set "/sys/fs/bcache/$cset/congested_read_threshold_us" 0
	sysfs_set "/sys/fs/bcache/$cset/congested_write_threshold_us" 0
	sysfs_set "$(bcache_attr writeback_delay)" 0
	DEV=/dev/bcache0
	info "make-bcache -w 4k -b 512k --writeback -C $SSD -B $MD; registered through" \
		"/sys/fs/bcache/register; cache_mode '$mode';" \
		"sequential_cutoff $(<"$(bcache_attr sequential_cutoff)");" \
		"writeback_percent $(<"$(bcache_attr writeback_percent)");" \
		"congested_{read,write}_threshold_us 0; writeback_delay 0;" \
		"data offset 8 KiB (make-bcache default); state $(<"$(bcache_attr state)")"
}

setup_dm-writecache() {
	local sectors
	need_module dm_mod dm_writecache
	sectors=$(blockdev --getsz "$MD")
	dmsetup create bkc-wc --table "0 $sectors writecache s $MD $SSD 4096 0" ||
		fail "dmsetup create of the writecache target failed"
	wait_for /dev/mapper/bkc-wc
	DEV=/dev/mapper/bkc-wc
	info "dmsetup table '$(dmsetup table bkc-wc)' (SSD mode; 4096-byte blocks;" \
		"default watermarks high 50 / low 45)"
}

setup_dm-cache() {
	local sectors ssd_sectors meta data table
	need_module dm_mod dm_cache dm_cache_smq
	sectors=$(blockdev --getsz "$MD")
	ssd_sectors=$(blockdev --getsz "$SSD")
	meta=$((DMC_META_MIB * 2048))
	data=$((ssd_sectors - meta))
	dmsetup create bkc-cmeta --table "0 $meta linear $SSD 0" ||
		fail "dm-linear for the dm-cache metadata failed"
	dmsetup create bkc-cdata --table "0 $data linear $SSD $meta" ||
		fail "dm-linear for the dm-cache data failed"
	wait_for /dev/mapper/bkc-cmeta
	wait_for /dev/mapper/bkc-cdata
	dd if=/dev/zero of=/dev/mapper/bkc-cmeta bs=1M count=$DMC_META_MIB \
		oflag=direct status=none || fail "cannot zero the dm-cache metadata"
	table="0 $sectors cache /dev/mapper/bkc-cmeta /dev/mapper/bkc-cdata $MD"
	table+=" $DMC_BLOCK_SECTORS 1 writeback smq 0"
	dmsetup create bkc-cache --table "$table" ||
		fail "dmsetup create of the cache target (smq, writeback) failed"
	wait_for /dev/mapper/bkc-cache
	DEV=/dev/mapper/bkc-cache
	info "SSD split by dm-linear into ${DMC_META_MIB} MiB zeroed metadata and" \
		"$((data / 2048)) MiB data; dmsetup table '$(dmsetup table bkc-cache)'" \
		"(block $((DMC_BLOCK_SECTORS / 2)) KiB, default migration_threshold)"
}

blkcache_attr() {
	echo "/sys/block/cache0/cache/$1"
}

# knobs DIR: the names in DIR on one line.
knobs() {
	local f out=
	for f in "$1"/*; do
		out+="${out:+ }${f##*/}"
	done
	echo "$out"
}

setup_blkcache() {
	local mode=$1 out cur
	bkc_load
	out=$("$make_cache" --wipe -C "$SSD" -B "$MD" "--$mode" 2>&1) ||
		fail "make-cache --$mode failed: $out"
	SET_UUID=$(sed -n 's/^Set UUID: *//p' <<<"$out")
	wait_for /dev/cache0 20
	cur=$(<"$(blkcache_attr cache_mode)")
	[[ $cur == *"[$mode]"* ]] || fail "cache0 cache_mode is '$cur', not $mode"
	DEV=/dev/cache0
	info "make-cache --wipe -C $SSD -B $MD --$mode; set $SET_UUID; cache_mode '$cur';" \
		"state $(<"$(blkcache_attr state)"); knobs present:" \
		"$(knobs /sys/block/cache0/cache)"
}

setup_blkcache-wb() {
	setup_blkcache writeback
}

setup_blkcache-wt() {
	setup_blkcache writethrough
}

# The knob that holds sequential streams out of the cache, if any.
cutoff_attr() {
	case $CFG in
	bcache) bcache_attr sequential_cutoff ;;
	blkcache-*) blkcache_attr sequential_cutoff ;;
	esac
}

# Whether the configuration can hold dirty data (has a drain figure).
has_drain() {
	case $CFG in
	bcache|dm-writecache|dm-cache|blkcache-wb) return 0 ;;
	*) return 1 ;;
	esac
}

# dm_status_field NAME N: the Nth word of `dmsetup status NAME`.
dm_status_field() {
	local s
	read -r -a s <<<"$(dmsetup status "$1")"
	echo "${s[$2 - 1]}"
}

# dirty_mib: dirty data in the cache now, in MiB ("n/a" if unknown).
dirty_mib() {
	local f n free
	case $CFG in
	bcache) to_mib "$(<"$(bcache_attr dirty_data)")" ;;
	blkcache-*)
		f=$(blkcache_attr dirty_data)
		if [ -r "$f" ]; then to_mib "$(<"$f")"; else echo n/a; fi
		;;
	dm-writecache)
		# Written-back blocks are freed, so used = dirty (incl. in flight).
		n=$(dm_status_field bkc-wc 5)
		free=$(dm_status_field bkc-wc 6)
		echo $(((n - free) * 4096 / MIB))
		;;
	dm-cache)
		n=$(dm_status_field bkc-cache 14)
		echo $((n * DMC_BLOCK_SECTORS * 512 / MIB))
		;;
	*) echo n/a ;;
	esac
}

# dirty_zero: true when the cache reports no dirty data at all.
dirty_zero() {
	local n free
	case $CFG in
	bcache) [ "$(<"$(bcache_attr dirty_data)")" = 0 ] ||
		[ "$(to_mib "$(<"$(bcache_attr dirty_data)")")" = 0 ] ;;
	blkcache-*) [ "$(<"$(blkcache_attr dirty_data)")" = 0 ] ;;
	dm-writecache)
		[ -z "$DRAIN_PID" ] || ! kill -0 "$DRAIN_PID" 2>/dev/null || return 1
		n=$(dm_status_field bkc-wc 5)
		free=$(dm_status_field bkc-wc 6)
		[ "$n" = "$free" ] && [ "$(dm_status_field bkc-wc 7)" = 0 ]
		;;
	dm-cache) [ "$(dm_status_field bkc-cache 14)" = 0 ] ;;
	esac
}

# drain_prepare: keep writeback from starting during the fill.  Returns 1
# (with DRAIN_NA set) when the drain cannot be measured.
drain_prepare() {
	case $CFG in
	bcache) sysfs_set "$(bcache_attr writeback_running)" 0 ;;
	blkcache-wb)
		if [ ! -e "$(blkcache_attr writeback_percent)" ]; then
			DRAIN_NA="no writeback_percent knob yet"
			return 1
		fi
		if [ ! -r "$(blkcache_attr dirty_data)" ]; then
			DRAIN_NA="no dirty_data attribute"
			return 1
		fi
		if [ -e "$(blkcache_attr writeback_running)" ]; then
			sysfs_set "$(blkcache_attr writeback_running)" 0
		fi
		;;
	esac
	return 0
}

# drain_start: let writeback run flat out; logs what it set.
drain_start() {
	case $CFG in
	bcache)
		sysfs_set "$(bcache_attr writeback_percent)" 0
		sysfs_set "$(bcache_attr writeback_rate_minimum)" "$BCACHE_RATE_MIN"
		sysfs_set "$(bcache_attr writeback_running)" 1
		info "drain: writeback_percent 0, writeback_rate_minimum $BCACHE_RATE_MIN" \
			"sectors/s, writeback_running 1 (0 during the fill), writeback_delay 0"
		;;
	dm-writecache)
		# "flush" writes everything back in LBA order and returns when
		# done ("cleaner" goes in LRU order and is several times slower).
		dmsetup message bkc-wc 0 flush &
		DRAIN_PID=$!
		info "drain: 'dmsetup message bkc-wc 0 flush' (writes back everything in" \
			"LBA order), until it returns and status shows no used block"
		;;
	dm-cache)
		dmsetup message bkc-cache 0 migration_threshold "$DMC_MIGRATION_THRESHOLD" ||
			fail "cannot raise migration_threshold"
		info "drain: migration_threshold $DMC_MIGRATION_THRESHOLD sectors," \
			"polling the status dirty count"
		;;
	blkcache-wb)
		sysfs_set "$(blkcache_attr writeback_percent)" 0
		if [ -e "$(blkcache_attr writeback_running)" ]; then
			sysfs_set "$(blkcache_attr writeback_running)" 1
		fi
		info "drain: writeback_percent 0, polling dirty_data"
		;;
	esac
}

teardown_cfg() {
	case $CFG in
	bcache)
		echo 1 >"$(bcache_attr stop)"
		wait_gone /sys/block/bcache0 60
		local d
		for d in /sys/fs/bcache/*-*-*-*-*; do
			[ -d "$d" ] || continue
			echo 1 >"$d/unregister"
			wait_gone "$d" 60
		done
		;;
	dm-writecache) dmsetup remove --retry bkc-wc ;;
	dm-cache)
		dmsetup remove --retry bkc-cache
		dmsetup remove --retry bkc-cdata
		dmsetup remove --retry bkc-cmeta
		;;
	blkcache-*)
		echo 1 >"$(blkcache_attr stop)"
		wait_gone /dev/cache0 60
		if [ -e "/sys/fs/blkcache/$SET_UUID/unregister" ]; then
			echo 1 >"/sys/fs/blkcache/$SET_UUID/unregister"
		elif [ -e "/sys/fs/blkcache/$SET_UUID/stop" ]; then
			echo 1 >"/sys/fs/blkcache/$SET_UUID/stop"
		fi
		wait_gone "/sys/fs/blkcache/$SET_UUID" 60
		;;
	esac
	DEV=
}

# ---------------------------------------------------------------------------
# Jobs.

# fio_run NAME ARGS...: runs one fio job on $DEV, its terse (v3) line in
# $FIODIR; returns fio's status.
# cpu_ticks: the guest's busy CPU time so far, all CPUs, in USER_HZ ticks
# (user, nice, system, irq, softirq, steal of /proc/stat; not idle or
# iowait).
cpu_ticks() {
	local c
	read -r -a c </proc/stat
	echo $((c[1] + c[2] + c[3] + c[6] + c[7] + c[8]))
}

# fio_run NAME FIO-OPTION...: one fio job on $DEV; FIO_OUT is its terse
# output, CPU_TICKS the guest CPU time it took (all of it: fio, the block
# layer, the cache, md, virtio).
fio_run() {
	local name=$1 rc=0 t0
	shift
	FIO_OUT=$FIODIR/$CFG-$name.terse
	t0=$(cpu_ticks)
	timeout -k 10 $((RUNTIME + FILL_CAP + 300)) \
		fio --output-format=terse --terse-version=3 --output="$FIO_OUT" --name="$name" \
		--filename="$DEV" --direct=1 --group_reporting "$@" \
		>"$FIODIR/$CFG-$name.log" 2>&1 || rc=$?
	CPU_TICKS=$(($(cpu_ticks) - t0))
	[ "$rc" = 0 ] || error "fio $name failed (status $rc): $(tail -n 3 "$FIO_OUT.log" 2>/dev/null | tr '\n' ' ')"
	return "$rc"
}

# cpu_per_io: guest CPU microseconds per 4k I/O of the last fio_run (its
# KiB read and written / 4), with one decimal.  Under scripts/vm --icount
# a guest nanosecond is an instruction: thousands of instructions per I/O.
cpu_per_io() {
	local kib
	kib=$(fio_field 1 6 47)
	[ "$kib" -gt 0 ] || { echo n/a; return; }
	# a tick is 10 ms (USER_HZ 100): 10^4 us, times 4 KiB per I/O
	awk -v t="$CPU_TICKS" -v k="$kib" 'BEGIN { printf "%.1f\n", t * 10000 * 4 / k }'
}

# fio_field DIV FIELD...: the sum of the FIELDs of the last job's terse
# line (group reporting: one line) divided by DIV, rounded.  Terse v3
# fields used: 8 read IOPS, 47 write KiB, 48 write KiB/s, 49 write IOPS,
# 50 write runtime (ms).
fio_field() {
	local div=$1
	shift
	awk -F';' -v div="$div" -v fields="$*" '$1 == 3 {
		n = split(fields, f, " "); v = 0
		for (i = 1; i <= n; i++) v += $f[i]
	} END { printf "%.0f\n", v / div }' "$FIO_OUT"
}

iops() {
	fio_field 1 8 49
}

# flushes_per_write F0: the SSD's flushes since F0 (disk_stat 16) per 4k
# write of the last fio_run, two decimals; n/a where the configuration
# has no SSD.
flushes_per_write() {
	local kib
	kib=$(fio_field 1 47)
	if [ "$CFG" = raw-md0 ] || [ "$kib" -le 0 ]; then
		echo n/a
		return
	fi
	awk -v f=$(($(disk_stat 16 "$SSD") - $1)) -v k="$kib" 'BEGIN { printf "%.2f\n", f * 4 / k }'
}

# mbps: MB/s (10^6 bytes/s) written by the last fio_run (KiB/s * 1024 / 10^6).
mbps() {
	fio_field 976.5625 48
}

# has_twin: the current configuration is a cache and the twin is usable.
has_twin() {
	[ -n "$TWIN" ] && [ "${CFG#raw-}" = "$CFG" ]
}

# twin_hold 0|1: the cache's writeback held (0) while a twin job runs, and
# let go again (1), where a knob allows.  Otherwise a cache that writes
# back when the device goes idle (blkcache) would share the guest's CPUs
# with the twin and make its reference slow.  Holding waits (3 s at most)
# for md0 to finish what writeback had sent it.
twin_hold() {
	local a i
	case $CFG in
	bcache) a=$(bcache_attr writeback_running) ;;
	blkcache-*) a=$(blkcache_attr writeback_running) ;;
	*) return 0 ;;
	esac
	[ -w "$a" ] || return 0
	sysfs_set "$a" "$1"
	[ "$1" = 0 ] || return 0
	for ((i = 0; i < 30; i++)); do
		[[ $(</sys/block/md0/inflight) =~ ^\ *0\ +0$ ]] && return 0
		sleep 0.1
	done
}

# twin_job METRIC DEV FIGURE FIO-OPTION...: the job just run, again on
# DEV, as this configuration's twin_METRIC; FIGURE is the function that
# reads it (iops, mbps).
twin_job() {
	local metric=$1 DEV=$2 figure=$3 v
	shift 3
	has_twin || return 0
	twin_hold 0
	if fio_run "twin-$metric" "$@"; then
		v=$("$figure")
	else
		v=n/a
	fi
	twin_hold 1
	put "twin_$metric" "$v" "$([ "$v" != n/a ] || echo "fio failed")"
}

# twin_fio METRIC FIO-OPTION...: the job just run, again on the SSD's
# twin, as this configuration's twin_METRIC (IOPS).
twin_fio() {
	local metric=$1
	shift
	twin_job "$metric" "$TWIN" iops "$@"
}

# twin_ioping METRIC OFF SIZE TARGET: ioping_avg on TARGET as twin_METRIC.
twin_ioping() {
	local v
	has_twin || return 0
	twin_hold 0
	v=$(ioping_avg "$2" "$3" "$4") || v=n/a
	twin_hold 1
	put "twin_$1" "$v"
}

# rand_opts / hot_opts: the fio options (in OPTS) of the jobs over the
# random region and of the hot reads, for the main boot's jobs and the
# --cpu boot's alike.
rand_opts() {
	OPTS=(--ioengine=libaio --bs=4k --offset="$RAND_OFF" --size="$RAND_SIZE"
		--time_based --runtime="$RUNTIME")
}
hot_opts() {
	OPTS=(--ioengine=libaio --rw=randread --bs=4k --iodepth=8
		--offset="$HOT_OFF" --size="$HOT_SIZE" --time_based --runtime="$RUNTIME")
}

job_rand() {
	local metric=$1 f0
	shift
	rand_opts
	set -- "${OPTS[@]}" "$@"
	[ "$metric" != fsync1 ] || f0=$(disk_stat 16 "$SSD")
	if fio_run "$metric" "$@"; then
		put "$metric" "$(iops)"
		[ "$metric" != fsync1 ] || put fsync1_flushes "$(flushes_per_write "$f0")"
	else
		put "$metric" n/a "fio failed"
	fi
	twin_fio "$metric" "$@"
}

# restore_cutoff ATTR OLD: puts back a value read from ATTR, which may be
# human readable ("4.0M") where the attribute only takes a number.
restore_cutoff() {
	local b
	echo "$2" >"$1" 2>/dev/null && return 0
	b=$(awk -v v="$2" 'BEGIN {
		u = substr(v, length(v), 1); m = 1
		if (u == "k") m = 1024; if (u == "M") m = 1024 ^ 2; if (u == "G") m = 1024 ^ 3
		if (m > 1) v = substr(v, 1, length(v) - 1)
		printf "%.0f\n", v * m }')
	sysfs_set "$1" "$b"
}

# write_cached NAME OFF SIZE: write [OFF, OFF+SIZE) once, 1 MiB at QD4,
# with the sequential bypass off where the cache has a knob for it, so
# that it lands in the cache.  PREP_NOTE says what was set.
write_cached() {
	local attr old='' rc=0
	attr=$(cutoff_attr)
	if [ -n "$attr" ] && [ -e "$attr" ]; then
		old=$(<"$attr")
		sysfs_set "$attr" 0
	fi
	fio_run "$1" --ioengine=libaio --rw=write --bs=1M --iodepth=4 \
		--offset="$2" --size="$3" || rc=$?
	[ -z "$old" ] || restore_cutoff "$attr" "$old"
	PREP_NOTE=${old:+sequential_cutoff 0 while writing it}
	return "$rc"
}

# Hot reads: write the region sequentially (with the sequential bypass off,
# so that it lands in the cache), then 4k random reads over it.
job_hot() {
	if ! write_cached hotprep $HOT_OFF $HOT_SIZE; then
		put hotread n/a "preparing write failed"
		return
	fi
	hot_opts
	set -- "${OPTS[@]}"
	if fio_run hotread "$@"; then
		put hotread "$(iops)" "$PREP_NOTE"
	else
		put hotread n/a "fio failed"
	fi
	# the twin was written once (precondition): it reads as written data
	twin_fio hotread "$@"
}

# The seed's randrw jobs over a region written first (issue 9's condition
# for its >= 95 % target): the first WRITTEN_SIZE of the random region,
# written as the hot region is, then randrw 8 and 1 jobs over it alone.
job_randrw_written() {
	if ! write_cached rrwprep $RAND_OFF $WRITTEN_SIZE; then
		put randrw8w n/a "preparing write failed"
		put randrw1w n/a "preparing write failed"
		return
	fi
	RAND_SIZE=$WRITTEN_SIZE job_rand randrw8w --ioengine=psync --rw=randrw --numjobs=8
	RAND_SIZE=$WRITTEN_SIZE job_rand randrw1w --ioengine=psync --rw=randrw --numjobs=1
}

# p999: the 99.9th percentile of the write completion latency of the
# last fio_run (run with --percentile_list=99.9), in us.
p999() {
	awk -F';' '$1 == 3 { split($59, a, "="); printf "%.0f\n", a[2] }' "$FIO_OUT"
}

# GC latency: 4k random writes QD8, their p99.9 without and then with a
# GC pass asked for every 0.2 s (trigger_gc), for the caches that have it.
job_gclat() {
	local gc='' p0 pid
	case $CFG in
	blkcache-*) gc=/sys/fs/blkcache/$SET_UUID/trigger_gc ;;
	bcache) gc=$(echo /sys/fs/bcache/*-*-*-*-*/internal/trigger_gc) ;;
	*) return 0 ;;
	esac
	if [ ! -w "$gc" ]; then
		put p999_gc n/a "no trigger_gc"
		return
	fi
	fio_run p999_nogc --ioengine=libaio --rw=randwrite --bs=4k --iodepth=8 \
		--offset=$RAND_OFF --size=$RAND_SIZE --time_based --runtime="$RUNTIME" \
		--percentile_list=99.9 || { put p999_gc n/a "fio failed"; return; }
	p0=$(p999)
	(while :; do echo 1 >"$gc"; sleep 0.2; done) &
	pid=$!
	if fio_run p999_gc --ioengine=libaio --rw=randwrite --bs=4k --iodepth=8 \
		--offset=$RAND_OFF --size=$RAND_SIZE --time_based --runtime="$RUNTIME" \
		--percentile_list=99.9; then
		put p999_nogc "$p0"
		put p999_gc "$(p999)"
	else
		put p999_gc n/a "fio failed"
	fi
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# A region written by one 64k sequential stream with default settings
# (a cache may bypass it), then read at random: how fast the cache serves
# data written that way, by promotion or by not bypassing it.
job_seqrand() {
	if ! fio_run seqrandprep --ioengine=psync --rw=write --bs=64k \
		--offset=$SEQRAND_OFF --size=$SEQRAND_SIZE; then
		put seqrand n/a "preparing write failed"
		return
	fi
	set -- --ioengine=libaio --rw=randread --bs=4k --iodepth=8 \
		--offset=$SEQRAND_OFF --size=$SEQRAND_SIZE --time_based --runtime="$RUNTIME"
	if fio_run seqrand "$@"; then
		put seqrand "$(iops)"
	else
		put seqrand n/a "fio failed"
	fi
	twin_fio seqrand "$@"
}

# ioping_avg [OFF SIZE [TARGET]]: QD1 4k direct reads of $DEV's hot region
# (or of [OFF, OFF+SIZE) of TARGET), 40 requests 0.05 s apart (after one
# warm-up request); prints the average in µs.
ioping_avg() {
	local s off=${1:-$HOT_OFF} size=${2:-$HOT_SIZE} target=${3:-$DEV}
	read -r -a s < <(ioping -B -D -c 41 -i 0.05 -s 4k -o "$off" -S "$size" "$target")
	[ "${#s[@]}" -ge 6 ] || return 1
	echo $(((s[5] + 500) / 1000))
}

# wait_writing DEV: waits (max 30 s) until DEV completes writes.
wait_writing() {
	local stat s w0 i
	stat=/sys/dev/block/$(printf '%d:%d' "0x$(stat -L -c %t "$1")" "0x$(stat -L -c %T "$1")")/stat
	read -r -a s <"$stat"
	w0=${s[4]}
	for ((i = 0; i < 300; i++)); do
		sleep 0.1
		read -r -a s <"$stat"
		[ "${s[4]}" = "$w0" ] || return 0
	done
	return 1
}

job_latency() {
	local v pid
	if v=$(ioping_avg); then
		put lat_idle "$v"
	else
		put lat_idle n/a "ioping failed"
		error "ioping failed"
	fi
	twin_ioping lat_idle "$HOT_OFF" "$HOT_SIZE" "$TWIN"
	# QD1 reads of data no job wrote through the cache: misses
	if v=$(ioping_avg "$MISS_OFF" "$MISS_SIZE"); then
		put lat_miss "$v"
	else
		put lat_miss n/a "ioping failed"
	fi
	# their reference: md0 itself, read (never written) under the cache
	twin_ioping lat_miss "$MISS_OFF" "$MISS_SIZE" "$MD"
	# The same while a 4k random writer (QD4) runs in the random region.
	fio --name=bgwrite --filename="$DEV" --direct=1 --ioengine=libaio \
		--rw=randwrite --bs=4k --iodepth=4 --offset=$RAND_OFF --size=$RAND_SIZE \
		--time_based --runtime=120 >"$FIODIR/$CFG-bgwrite.log" 2>&1 &
	pid=$!
	echo "$pid" >"$BG_PID_FILE"
	if ! wait_writing "$DEV"; then
		put lat_load n/a "background writer did not start"
	elif v=$(ioping_avg); then
		put lat_load "$v"
	else
		put lat_load n/a "ioping failed"
	fi
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$BG_PID_FILE"
}

# md_member_reads: read requests md0's members have completed so far
# (diskstats); during bypassed whole-stripe writes only other work reads
# them (writeback's stripe fill, a read-modify-write, migrations).
md_member_reads() {
	local slaves
	slaves=/sys/block/$(basename "$(readlink -f "$MD")")/slaves
	# shellcheck disable=SC2046 # one word per member
	disk_stat 1 $(ls "$slaves" 2>/dev/null)
}

job_seq() {
	local r0
	set -- --ioengine=libaio --rw=write --bs=1M --iodepth=4 \
		--offset=$SEQ_OFF --size=$SEQ_SIZE --time_based --runtime="$RUNTIME"
	r0=$(md_member_reads)
	if fio_run seqwrite "$@"; then
		put seqwrite "$(mbps)"
		put seqwrite_mreads "$(($(md_member_reads) - r0))"
	else
		put seqwrite n/a "fio failed"
	fi
	# The reference right after: the same writes on md0 itself, under the
	# cache, with its writeback held.  They overwrite what the cache
	# wrote there, which no later job reads (the drains set up afresh).
	twin_job seqwrite "$MD" mbps "$@"
}

# job_drain NAME OFFSET SPAN_MIB MIB: on a freshly set up cache, MIB of 4k
# random writes over SPAN_MIB from OFFSET, each block at most once (fio's
# random map; MIB = SPAN_MIB covers it exactly), capped at FILL_CAP s;
# then the time until the cache reports no dirty data, capped at
# DRAIN_CAP s.  Figures NAME_s, NAME_dirty_mib, NAME_fill_mib.
job_drain() {
	local name=$1 off=$2 span=$3 mib=$4 written d0 t0 t d
	DRAIN_NA=
	DRAIN_PID=
	if ! drain_prepare; then
		put "${name}_s" n/a "$DRAIN_NA"
		return
	fi
	if ! fio_run "$name-fill" --ioengine=libaio --rw=randwrite --bs=4k --iodepth=16 \
		--offset="$off" --size=$((span * MIB)) --io_size=$((mib * MIB)) \
		--runtime="$FILL_CAP"; then
		put "${name}_s" n/a "fill failed"
		return
	fi
	written=$(fio_field 1024 47)
	d0=$(dirty_mib)
	put "${name}_fill_mib" "$written" \
		"$(fio_field 1000 50)s at $(fio_field 1 49) IOPS"
	put "${name}_dirty_mib" "$d0"
	if [ "$d0" = n/a ]; then
		put "${name}_s" n/a "dirty data cannot be read"
		return
	fi
	if [ "$d0" = 0 ] && dirty_zero; then
		put "${name}_s" n/a "no dirty data after the fill"
		return
	fi
	drain_start
	t0=$(now_us)
	while ! dirty_zero; do
		t=$(secs_since "$t0")
		if [ "${t%.*}" -ge "$DRAIN_CAP" ]; then
			d=$(dirty_mib)
			put "${name}_s" ">$DRAIN_CAP" "$d MiB still dirty"
			drain_wait_pid
			return
		fi
		sleep 1
	done
	put "${name}_s" "$(secs_since "$t0")"
	drain_wait_pid
}

# fresh_setup: the configuration torn down and set up again (a cache with
# nothing in it), for a drain.
fresh_setup() {
	teardown_cfg
	teardown_all
	log "$CFG: fresh setup for $1"
	INFO_OFF=1
	"setup_$CFG"
	INFO_OFF=
}

# drain_wait_pid: a drain command still running (dm-writecache's flush
# message cannot be interrupted) must end before the teardown.
drain_wait_pid() {
	[ -n "$DRAIN_PID" ] || return 0
	if kill -0 "$DRAIN_PID" 2>/dev/null; then
		log "$CFG: waiting for the drain command to return"
	fi
	wait "$DRAIN_PID" || error "the drain command failed"
	DRAIN_PID=
}

# save_stats WHEN: the cache's own counters into stats.txt, for diagnosis
# (hits, misses, bypass, dirty).  Best effort.
save_stats() {
	{
		echo "== $CFG, after $1"
		case $CFG in
		bcache)
			grep -r . /sys/block/bcache0/bcache/stats_total/
			echo "dirty_data: $(<"$(bcache_attr dirty_data)")"
			;;
		blkcache-*)
			grep -r . /sys/block/cache0/cache/stats_total/
			echo "dirty_data: $(<"$(blkcache_attr dirty_data)")"
			;;
		dm-writecache) dmsetup status bkc-wc ;;
		dm-cache) dmsetup status bkc-cache ;;
		esac
	} >>"$OUT/stats.txt" 2>&1 || true
}

# ---------------------------------------------------------------------------

# run_config CFG: set up, every job, tear down; then the drain on a fresh
# setup.  Runs in a subshell: a failure ends only this configuration.
run_config() {
	local bytes
	"setup_$CFG"
	bytes=$(dev_bytes "$DEV")
	[ "$bytes" -ge "$NEED_BYTES" ] ||
		fail "$DEV has $bytes bytes, the jobs need $NEED_BYTES"
	job_rand randwrite --rw=randwrite --iodepth=8
	job_rand randrw8 --ioengine=psync --rw=randrw --numjobs=8
	job_rand randrw1 --ioengine=psync --rw=randrw --numjobs=1
	job_rand fsync1 --ioengine=psync --rw=randwrite --fsync=1 --numjobs=1
	job_rand fsync8 --ioengine=psync --rw=randwrite --fsync=1 --numjobs=8
	job_randrw_written
	job_hot
	job_seqrand
	job_gclat
	job_latency
	job_seq
	save_stats "the jobs"
	if has_drain; then
		fresh_setup "the drain"
		job_drain drain "$DRAIN_OFF" "$DRAIN_MIB" "$DRAIN_MIB"
		save_stats "the drain"
		# the issue 9 case: sparse dirty data (one 4k block in 8)
		fresh_setup "the sparse drain"
		job_drain sparse "$SPARSE_OFF" $((DRAIN_MIB * 2)) $((DRAIN_MIB / 4))
		save_stats "the sparse drain"
	elif [ "${CFG#raw}" != "$CFG" ]; then
		put drain_s n/a "no cache"
		put sparse_s n/a "no cache"
	else
		put drain_s n/a "writethrough keeps no dirty data"
		put sparse_s n/a "writethrough keeps no dirty data"
	fi
	teardown_cfg
}

# The --cpu boot's jobs: guest CPU time per I/O of the random writes
# (the first job on a fresh configuration, as in the full run) and of the
# hot reads, nothing else.  The hot reads run with the cache's writeback
# held where a knob allows (twin_hold: bcache, blkcache), so that no
# writeback of the random writes is counted in them.
run_config_cpu() {
	"setup_$CFG"
	rand_opts
	if fio_run randwrite "${OPTS[@]}" --rw=randwrite --iodepth=8; then
		put cpu_randwrite "$(cpu_per_io)"
	else
		put cpu_randwrite n/a "fio failed"
	fi
	twin_hold 0
	hot_opts
	if ! write_cached hotprep $HOT_OFF $HOT_SIZE; then
		put cpu_hotread n/a "preparing write failed"
	elif fio_run hotread "${OPTS[@]}"; then
		put cpu_hotread "$(cpu_per_io)"
	else
		put cpu_hotread n/a "fio failed"
	fi
	twin_hold 1
	teardown_cfg
}

# cpu_na REASON: in the --cpu boot, n/a with REASON for each CPU figure of
# the current configuration that is not in raw.csv yet.
cpu_na() {
	local m
	[ -n "$CPU_ONLY" ] || return 0
	for m in cpu_randwrite cpu_hotread; do
		grep -q "^$CFG,$m," "$RAW" || put "$m" n/a "$1"
	done
}

# on_err LINE CMD: the ERR trap of a configuration's subshell; keeps the
# innermost failure as the reason.
on_err() {
	[ -s "$REASON_FILE" ] || echo "line $1: '$2' failed" >"$REASON_FILE"
}

# in_config CMD...: run CMD in a subshell that stops at the first failing
# command (its line goes to REASON_FILE); its status in CFG_RC.  Call it
# as a command of its own: in a condition, bash ignores set -e inside.
in_config() {
	set +e
	(
		set -eE
		trap 'on_err $LINENO "$BASH_COMMAND"' ERR
		"$@"
	)
	CFG_RC=$?
	set -e
}

# precondition: writes every HDD, the SSD and its twin once, in parallel.  The
# disk images start sparse, and a first write into a hole costs the host
# an allocation: without this the first configuration measured (the raw
# SSD) loses a third of its IOPS.
precondition() {
	local d pids=() t0 rc=0
	t0=$(now_us)
	for d in $BKC_HDDS $SSD $TWIN; do
		dd if=/dev/zero of="$d" bs=4M count=$(($(dev_bytes "$d") / (4 * MIB))) \
			oflag=direct status=none &
		pids+=($!)
	done
	for d in "${pids[@]}"; do
		wait "$d" || rc=1
	done
	[ "$rc" = 0 ] || echo "setup: preconditioning the disks failed" >>"$ERRORS"
	log "disks preconditioned (written once) in $(secs_since "$t0")s"
}

# ---------------------------------------------------------------------------
# Seed 000's headline: ioping on a filesystem on the device (its own 1 MiB
# working file, written first) while another file of the same filesystem
# is written, with the HDDs' seek latency emulated by an 8 ms dm-delay
# under each RAID member.  md0 is made again over the delayed members for
# it.  raw-ssd's figure is the idle one (the target's reference).

HL_MNT=/mnt/bkc-headline
HL_CONFIGS=" raw-ssd raw-md0 bcache blkcache-wb "

job_headline() {
	local v pid=''
	mkfs.xfs -f -q -K "$DEV" || fail "mkfs.xfs $DEV failed"
	mkdir -p "$HL_MNT"
	mount "$DEV" "$HL_MNT" || fail "mounting xfs on $DEV failed"
	dd if=/dev/urandom of="$HL_MNT/work" bs=64k count=16 oflag=direct \
		status=none || fail "writing the working file failed"
	if [ "$CFG" != raw-ssd ]; then
		fio --name=hlwrite --directory="$HL_MNT" --filename=writer \
			--rw=write --bs=1M --size=256m --direct=1 --ioengine=libaio \
			--iodepth=4 --time_based --runtime=120 \
			>"$FIODIR/$CFG-hlwrite.log" 2>&1 &
		pid=$!
		echo "$pid" >"$BG_PID_FILE"
		wait_writing "$DEV" || { kill "$pid"; fail "the writer did not start"; }
	fi
	if v=$(ioping_avg 0 $((1 << 20)) "$HL_MNT/work"); then
		put headline "$v" "$([ "$CFG" = raw-ssd ] && echo idle || echo "+writer")"
	else
		put headline n/a "ioping failed"
	fi
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		rm -f "$BG_PID_FILE"
	fi
	umount "$HL_MNT" || fail "umount $HL_MNT failed"
}

headline_config() {
	"setup_$CFG"
	job_headline
}

# headline_phase: md0 over dm-delay members, then job_headline on each
# selected configuration of HL_CONFIGS; md0 is stopped at the end.
headline_phase() {
	local hdds i d sz members=() c
	CFG=headline
	# configs.txt keeps the main runs' descriptions (md0 is over dm-delay here)
	INFO_OFF=1
	need_module dm_mod dm_delay
	read -r -a hdds <<<"$BKC_HDDS"
	# shellcheck disable=SC2119  # no --zero
	(stop_raid) || { error "cannot stop md0 for the headline"; return; }
	HAVE_MD=
	for i in "${!hdds[@]}"; do
		d=${hdds[$i]}
		sz=$(blockdev --getsz "$d")
		dmsetup create "bkc-dly$i" --table "0 $sz delay $d 0 8" ||
			{ error "dm-delay over $d failed"; return; }
		wait_for "/dev/mapper/bkc-dly$i"
		members+=("/dev/mapper/bkc-dly$i")
	done
	(make_raid5 64 "${members[@]}") || { error "md0 over dm-delay failed"; return; }
	HAVE_MD=1
	for c in "${SELECTED[@]}"; do
		[ "${HL_CONFIGS/ $c /}" != "$HL_CONFIGS" ] || continue
		CFG=$c
		teardown_all
		in_config headline_config
		if [ "$CFG_RC" != 0 ]; then
			put headline n/a "$(cat "$REASON_FILE" 2>/dev/null || echo "status $CFG_RC")"
			umount "$HL_MNT" 2>/dev/null || true
		fi
	done
	teardown_all
	# shellcheck disable=SC2119  # no --zero
	(stop_raid) || log "stopping md0 failed"
	HAVE_MD=
	for i in "${!hdds[@]}"; do
		dmsetup remove --retry "bkc-dly$i" >/dev/null 2>&1 ||
			log "cannot remove bkc-dly$i"
	done
}

# drift_check: the raw SSD's random writes and hot reads once more at the
# end, so that the report can show how much the host's speed moved during
# the run (other work on the host's cores slows TCG down).
drift_check() {
	local rc
	[[ " ${SELECTED[*]} " == *" raw-ssd "* ]] || return 0
	CFG=raw-ssd
	log "=== raw-ssd again (drift check)"
	teardown_all
	set +e
	(
		set -e
		DEV=$SSD
		job_rand end_randwrite --rw=randwrite --iodepth=8
		fio_run end_hotread --ioengine=libaio --rw=randread --bs=4k --iodepth=8 \
			--offset=$HOT_OFF --size=$HOT_SIZE --time_based --runtime="$RUNTIME"
		put end_hotread "$(iops)"
	)
	rc=$?
	set -e
	[ "$rc" = 0 ] || error "drift check failed"
}

needs_md() {
	[ "$1" != raw-ssd ]
}

main() {
	local c rc t0 reason
	parse_args "$@"
	mkdir -p "$FIODIR"
	: >"$RAW"
	: >"$INFO"
	: >"$ERRORS"
	{
		echo "kernel $(uname -r)"
		echo "runtime ${RUNTIME}s per job; drain ${DRAIN_MIB} MiB, fill cap ${FILL_CAP}s, drain cap ${DRAIN_CAP}s"
		echo "ssd $SSD $(($(dev_bytes "$SSD") / MIB)) MiB; hdds $BKC_HDDS"
		if [ -n "$TWIN" ] && [ "$(dev_bytes "$TWIN")" -ge "$NEED_BYTES" ]; then
			echo "twin $TWIN $(($(dev_bytes "$TWIN") / MIB)) MiB"
		else
			echo "twin none (no scratch disk of $((NEED_BYTES / MIB)) MiB)"
			TWIN=
		fi
		echo "configs ${SELECTED[*]}"
	} >"$OUT/meta.txt"
	# a drain may take up to DRAIN_CAP: a peer's flush that waits that
	# long (dm-writecache's "flush" message) is a figure, not a hang
	echo $((DRAIN_CAP + 60)) >/proc/sys/kernel/hung_task_timeout_secs
	# instructions do not depend on where the host allocates
	[ -n "$CPU_ONLY" ] || precondition
	for c in "${SELECTED[@]}"; do
		needs_md "$c" || continue
		CFG=setup
		rm -f "$REASON_FILE"
		in_config make_raid5 64
		rc=$CFG_RC
		if [ "$rc" = 0 ]; then
			HAVE_MD=1
		else
			reason=$(cat "$REASON_FILE" 2>/dev/null || echo "status $rc")
			echo "setup: cannot create md0: $reason" >>"$ERRORS"
		fi
		break
	done
	for c in "${SELECTED[@]}"; do
		CFG=$c
		log "=== $CFG"
		t0=$SECONDS
		rm -f "$REASON_FILE"
		if needs_md "$c" && [ -z "$HAVE_MD" ]; then
			put setup n/a "md0 could not be created"
			cpu_na "md0 could not be created"
			continue
		fi
		teardown_all
		in_config "run_config${CPU_ONLY:+_cpu}"
		if [ "$CFG_RC" != 0 ]; then
			reason=$(cat "$REASON_FILE" 2>/dev/null || echo "exited with status $CFG_RC")
			error "$reason"
			put setup n/a "$reason"
			cpu_na "$reason"
			teardown_all
		fi
		put elapsed_s $((SECONDS - t0))
	done
	[ -n "$CPU_ONLY" ] || drift_check
	teardown_all
	# in a subshell: a failure there (fail exits) ends only the phase
	if [ -n "$HAVE_MD" ] && [ -z "$CPU_ONLY" ]; then
		in_config headline_phase
		[ "$CFG_RC" = 0 ] || log "the headline phase failed (status $CFG_RC)"
	fi
	if [ -n "$HAVE_MD" ]; then
		# shellcheck disable=SC2119  # no --zero
		(stop_raid) || log "stopping md0 failed"
	fi
	log "done"
	# Never return: bash reads a script as it runs it, and the file may be
	# edited while a long run is going on.
	exit 0
}

# Sourcing the file (for experiments) defines the functions only.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	main "$@"
fi
