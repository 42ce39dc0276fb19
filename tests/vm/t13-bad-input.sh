#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# boot: shared
#
# Issue 2, test d: bad input.  Corrupt superblocks, double registration,
# garbage in every writable sysfs file, make-cache on signed, mounted or
# badly sized devices.  Each must fail with the right error, leave a
# dmesg line naming the device, change nothing, and never oops.
. "$BKC_REPO/tests/vm/lib.sh"

cd /tmp
sbedit=$BKC_REPO/tests/vm/sbedit
read -r s1 s2 <<<"$BKC_SCRATCH"
n1=${s1#/dev/}
bkc_load
need_module xfs loop

# expect_reg ERRNO-TEXT DEV DMESG-TEXT: registering DEV must fail with
# ERRNO-TEXT, log DMESG-TEXT naming the device, and register nothing.
expect_reg() {
	local want=$1 dev=$2 why=$3 err before after
	# shellcheck disable=SC2012  # names of sysfs and /dev entries
	before=$(ls /sys/fs/blkcache /dev | sort)
	dmesg -C
	if err=$(bash -c "echo $dev >/sys/fs/blkcache/register" 2>&1); then
		fail "registering $dev ($why) succeeded"
	fi
	grep -q "$want" <<<"$err" || fail "registering $dev ($why): '$err', wanted '$want'"
	dmesg_has "blkcache: ${dev#/dev/}: .*$why" ||
		fail "no dmesg line for $dev: $why (got: $(dmesg | grep blkcache))"
	# shellcheck disable=SC2012
	after=$(ls /sys/fs/blkcache /dev | sort)
	[ "$before" = "$after" ] || fail "a failed registration of $dev changed something"
	check_dmesg || fail "kernel complained"
	log "refused $dev: $why ($want)"
}

# -- corrupt superblocks ------------------------------------------------
dd if=/dev/urandom of="$s1" bs=4k count=4 oflag=direct status=none
expect_reg "Invalid argument" "$s1" "bad magic"
echo "$s1" >/sys/fs/blkcache/register_quiet || fail "register_quiet on a foreign device"
[ -z "$(ls /dev/cache* 2>/dev/null)" ] || fail "register_quiet registered garbage"

"$make_cache" --wipe --no-register -B "$s1" >/dev/null
"$sbedit" "$s1" --keep-csum seq=77
expect_reg "Bad message" "$s1" "bad superblock checksum"

"$make_cache" --wipe --no-register -B "$s1" >/dev/null
"$sbedit" "$s1" version=2
expect_reg "Protocol not supported" "$s1" "unsupported superblock version"

"$make_cache" --wipe --no-register -B "$s1" >/dev/null
"$sbedit" "$s1" feature_incompat=0x100
expect_reg "Operation not supported" "$s1" "unknown incompatible feature"

"$make_cache" --wipe --no-register -B "$s1" >/dev/null
"$sbedit" "$s1" data_offset=$(($(dev_bytes "$s1") + 4096))
expect_reg "Structure needs cleaning" "$s1" "data_offset beyond the end"

"$make_cache" --wipe --no-register -C "$s1" >/dev/null
"$sbedit" "$s1" nbuckets=$((1 << 30))
expect_reg "Structure needs cleaning" "$s1" "nbuckets beyond the end"

"$make_cache" --wipe --no-register -C "$s1" >/dev/null
"$sbedit" "$s1" bucket_size=12288
expect_reg "Structure needs cleaning" "$s1" "bucket size is not a power of two"

# A truncated device: format 64 MiB, then present only 48 MiB of it.
truncate -s 64M /tmp/img
loopdev=$(losetup -f --show /tmp/img)
"$make_cache" --no-register -B "$loopdev" >/dev/null
losetup -d "$loopdev"
truncate -s 48M /tmp/img
loopdev=$(losetup -f --show /tmp/img)
on_exit "losetup -d $loopdev"
expect_reg "Structure needs cleaning" "$loopdev" "truncated"

# -- double registration ---------------------------------------------
out=$("$make_cache" --wipe -C "$BKC_SSD") || fail "make-cache -C: $out"
set_uuid=$(sed -n 's/^Set UUID: *//p' <<<"$out")
[ -d "/sys/fs/blkcache/$set_uuid" ] || fail "set not registered"
expect_reg "Device or resource busy" "$BKC_SSD" "already registered"
echo "$BKC_SSD" >/sys/fs/blkcache/register_quiet ||
	fail "register_quiet of a registered device failed"
"$make_cache" --wipe --no-register -C "$s2" -u "$set_uuid" >/dev/null
expect_reg "File exists" "$s2" "already registered"

# -- a running device for the sysfs tests -------------------------------
"$make_cache" --wipe --no-register -B "$s1" >/dev/null
echo "$s1" >/sys/fs/blkcache/register
wait_for /dev/cache0
echo "$set_uuid" >/sys/block/cache0/cache/attach

snapshot() {
	local f readable=()
	for f in /sys/block/cache0/cache/* /sys/fs/blkcache/"$set_uuid"/* \
		/sys/fs/blkcache/"$set_uuid"/cache0/*; do
		case ${f##*/} in
		# these move on their own (timers, memory, the rate controller)
		writeback_rate | writeback_rate_debug | btree_cache_size) continue ;;
		esac
		[ -f "$f" ] && readable+=("$f")
	done
	# one process for all of them (forks are slow under TCG)
	grep -H -s "" "${readable[@]}" || true
	ls /dev /sys/fs/blkcache
	# the raw superblocks: any rewrite bumps seq
	dd if="$s1" bs=4k skip=1 count=1 status=none | sha256sum
	dd if="$BKC_SSD" bs=4k skip=1 count=1 status=none | sha256sum
}

long=$(head -c 5000 /dev/zero | tr '\0' x)
# Garbage for every attribute, then what is garbage only for some kinds.
garbage=(garbage "-1" "99999999999999999999999" "$long" $'\x01\x02\x03'
	"1 1" "1x" "4.5M" "writeback2" "$set_uuid-x" "${set_uuid:0:35}")
label_garbage=("$long" "$(head -c 33 /dev/zero | tr '\0' y)" $'bad\x01label')
extra_garbage() {
	case ${1##*/} in
	attach | detach | stop | unregister | clear_stats | trigger_gc |\
	register | register_quiet | running)
		printf '%s\n' 2 0 11 ;;
	stop_when_cache_set_failed) printf '%s\n' Auto auto2 never ;;
	io_error_limit) printf '%s\n' 1048577 ;;
	io_error_halflife) printf '%s\n' 31622401 ;;
	writeback_percent) printf '%s\n' 101 1000 ;;
	writeback_running) printf '%s\n' 2 11 ;;
	writeback_delay) printf '%s\n' 3601 ;;
	writeback_rate_max) printf '%s\n' 100 4095 ;;
	journal_delay_ms) printf '%s\n' 10001 ;;
	sequential_cutoff) printf "%s\\n" 2t 99999999t ;;
	cache_mode) printf '%s\n' none2 Writeback ;;
	cache_replacement_policy) printf '%s\n' lru2 LRU ;;
	esac
}
before=$(snapshot)
mapfile -t files < <(find /sys/fs/blkcache /sys/block/cache0/cache/ \
	-type f -perm -u+w | sort)
[ "${#files[@]}" -ge 8 ] || fail "found only ${#files[@]} writable files"
for f in "${files[@]}"; do
	list=("${garbage[@]}")
	mapfile -t -O "${#list[@]}" list < <(extra_garbage "$f")
	[ "${f##*/}" = label ] && list=("${label_garbage[@]}")
	for g in "${list[@]}"; do
		if err=$(printf '%s\n' "$g" 2>&1 >"$f"); then
			fail "writing '${g:0:40}' to $f succeeded"
		fi
		case "$err" in
		*"Invalid argument"*) ;;
		*) fail "writing '${g:0:40}' to $f: '$err', wanted EINVAL" ;;
		esac
	done
	[ "$(snapshot)" = "$before" ] || {
		diff <(echo "$before") <(snapshot) >&2
		fail "garbage written to $f changed something"
	}
	check_dmesg || fail "garbage to $f made the kernel complain"
done
log "garbage rejected by ${#files[@]} writable files"

# -- refusals while in use ----------------------------------------------
mkfs.xfs -q -f /dev/cache0
mkdir -p /mnt/t
mount /dev/cache0 /mnt/t
on_exit "umount /mnt/t 2>/dev/null || true"
must_fail sh -c "echo 1 >/sys/block/cache0/cache/stop"
must_fail sh -c "echo 1 >/sys/fs/blkcache/$set_uuid/stop"
[ -e /dev/cache0 ] || fail "stop of a mounted device removed it"
umount /mnt/t
echo 1 >"/sys/fs/blkcache/$set_uuid/stop"
wait_gone /dev/cache0
wait_gone "/sys/fs/blkcache/$set_uuid"

# -- make-cache refusals ------------------------------------------------
mkfs.xfs -q -f "$s2"
sum=$(head -c 1M "$s2" | sha256sum)
if out=$("$make_cache" --no-register -B "$s2" 2>&1); then
	fail "make-cache formatted an xfs device without --wipe"
fi
grep -qi xfs <<<"$out" || fail "make-cache did not name the xfs signature: $out"
for bad in "-b 3000" "-b 100k" "-w 1000" "-o 12345" "-b 0" "-b garbage"; do
	# shellcheck disable=SC2086
	must_fail "$make_cache" --wipe --no-register $bad -B "$s2"
done
[ "$(head -c 1M "$s2" | sha256sum)" = "$sum" ] || fail "a refused make-cache wrote"
# 4 KiB buckets on 2 GiB (a sparse image file): more than the bucket
# table can cover (formatted, the set failed to register: "cannot set up
# the cache metadata (-7)")
truncate -s 2G /tmp/big.img
if out=$("$make_cache" --wipe --no-register -b 4k -C /tmp/big.img 2>&1); then
	fail "make-cache formatted 2 GiB with 4 KiB buckets: $out"
fi
grep -q "too many buckets for the bucket size" <<<"$out" ||
	fail "make-cache -b 4k of 2 GiB did not say why: $out"
[ "$(du -k /tmp/big.img | cut -f1)" = 0 ] || fail "a refused make-cache wrote to /tmp/big.img"
rm -f /tmp/big.img
mount "$s2" /mnt/t
must_fail "$make_cache" --wipe --no-register -B "$s2"
must_fail sh -c "echo $s2 >/sys/fs/blkcache/register"
umount /mnt/t
[ "$(blkid -p -s TYPE -o value "$s2")" = xfs ] || fail "mounted device lost its xfs signature"
must_fail "$make_cache" --show "$s2"
"$make_cache" --wipe --no-register -B "$s2" >/dev/null || fail "--wipe refused"

bkc_unload
log "bad input OK (scratch ${n1})"
