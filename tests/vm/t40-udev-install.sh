#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# host-driver: install-run
#
# Issue 8: installed like a distribution package, brought up by udev alone,
# in one boot.  tests/vm/install-run has run `make install` (no DESTDIR) on
# the host, whose system the guest sees: the module in
# /lib/modules/<kver>/updates with depmod, make-cache in /usr/sbin, the
# rules in /usr/lib/udev/rules.d, the man pages.  Then:
#   - `modprobe blkcache` loads the installed module and pulls in
#     libcrc32c by itself;
#   - with the module unloaded and md0 stopped, systemd-udevd runs with the
#     installed rules (mdadm's incremental assembly masked, so that md0 is
#     assembled by hand, late); a trigger loads the module and registers
#     the SSD, and assembling md0 afterwards brings up /dev/cache0 with
#     /dev/cache/by-uuid/<backing uuid> and /dev/cache/by-label/<label>;
#   - a filesystem made on /dev/cache0 gets its /dev/disk/by-uuid link;
#   - after stop of everything (module unloaded again), md0 is triggered
#     first and waits, then the SSD: /dev/cache0 and the links come back;
#   - `make-cache --status` and `--status --json` (parsed by python3) show
#     the set and the device with the right names, mode and state;
#   - a label change moves the by-label link;
#   - make-cache --flush drains the dirty data and restores the tunables it
#     changed, --detach drains and detaches;
#   - sequential_cutoff, writeback_percent, writeback_delay,
#     writeback_rate_max and writeback_max_age read back the same after
#     stop and registration (make-cache --show sees them on disk).
#   - root on the cache: XFS on /dev/cache0 (attached, writeback, dirty)
#     gets a minimal busybox root; install-run then builds an initramfs
#     with mkinitramfs and the installed hook and boots it with
#     root=/dev/cache0: the initramfs registers md0 and the SSD, mounts
#     the root, and its /sbin/init checks the mount, the state and the
#     data and reports through the results share.
# shellcheck disable=SC2119  # make_raid5 and stop_raid take no arguments here
. "$BKC_REPO/tests/vm/lib.sh"

cd /tmp
KVER=$(uname -r)
LABEL=t40vol
UDEVD=/lib/systemd/systemd-udevd
[ -x "$UDEVD" ] || fail "no $UDEVD"

# ---- what make install put there -------------------------------------------

[ -e "$BKC_RESULTS/install.log" ] ||
	fail "not run through tests/vm/install-run (no install.log)"
for f in "/lib/modules/$KVER/updates/blkcache.ko" /usr/sbin/make-cache \
	/usr/lib/udev/rules.d/69-blkcache.rules \
	/usr/share/man/man8/make-cache.8 /usr/share/man/man4/blkcache.4; do
	[ -f "$f" ] || fail "make install did not install $f"
done
grep -q "updates/blkcache.ko:.*libcrc32c" "/lib/modules/$KVER/modules.dep" ||
	fail "depmod did not record blkcache.ko and its dependency"
log "installed: module, make-cache, rules, man pages; modules.dep has blkcache"

[ ! -d /sys/module/blkcache ] || fail "blkcache is loaded before the test"
modprobe blkcache || fail "modprobe blkcache failed"
[ -d /sys/module/blkcache ] || fail "modprobe did not load blkcache"
[ "$(modinfo -n blkcache)" = "/lib/modules/$KVER/updates/blkcache.ko" ] ||
	fail "modprobe found $(modinfo -n blkcache), not the installed module"
[ -d /sys/module/libcrc32c ] || fail "libcrc32c was not pulled in"
modprobe -r blkcache || fail "modprobe -r blkcache failed"
log "modprobe blkcache from the installed tree, with libcrc32c"

# ---- format (the module is not loaded: nothing registers) ------------------

make_raid5
MC=/usr/sbin/make-cache
out=$("$MC" --wipe --writeback -l "$LABEL" -C "$BKC_SSD" -B /dev/md0) ||
	fail "make-cache failed: $out"
set_uuid=$(sed -n 's/^Set UUID: *//p' <<<"$out")
buuid=$("$MC" --probe /dev/md0 | sed -n 's/^BLKCACHE_UUID=//p')
if [ -z "$set_uuid" ] || [ -z "$buuid" ]; then
	fail "no set or backing uuid: $out"
fi
[ ! -d /sys/module/blkcache ] || fail "make-cache loaded the module"
stop_raid

# ---- udev alone ----------------------------------------------------------

mkdir -p /run/udev/rules.d
# md0 is assembled by hand, after the SSD is up
ln -sf /dev/null /run/udev/rules.d/64-md-raid-assembly.rules
"$UDEVD" --daemon || fail "systemd-udevd did not start"
on_exit "udevadm control --exit"
udevadm settle -t 30

# settled: wait for the udev queue to drain
settled() {
	udevadm settle -t 30 || fail "udev did not settle"
}

# links_ok LABEL: the stable names of /dev/cache0 point at it
links_ok() {
	local l
	for l in "/dev/cache/by-uuid/$buuid" "/dev/cache/by-label/$1"; do
		wait_for "$l" 10
		[ "$(readlink -f "$l")" = /dev/cache0 ] ||
			fail "$l points at $(readlink -f "$l"), not /dev/cache0"
	done
}

udevadm trigger --action=add --subsystem-match=block
settled
[ -d /sys/module/blkcache ] || fail "udev did not load blkcache"
[ -d "/sys/fs/blkcache/$set_uuid" ] || fail "udev did not register the SSD"
[ ! -e /dev/cache0 ] || fail "/dev/cache0 exists before md0 is assembled"
read -r -a hdds <<<"$BKC_HDDS"
mdadm --assemble "$BKC_MD" "${hdds[@]}" || fail "mdadm --assemble failed"
settled
wait_for /dev/cache0 30
links_ok "$LABEL"
log "SSD first, md0 assembled late: /dev/cache0 and its links by udev alone"

mkfs.xfs -q -f /dev/cache0
settled
fsuuid=$(blkid -s UUID -o value /dev/cache0)
wait_for "/dev/disk/by-uuid/$fsuuid" 10
[ "$(readlink -f "/dev/disk/by-uuid/$fsuuid")" = /dev/cache0 ] ||
	fail "/dev/disk/by-uuid/$fsuuid does not point at /dev/cache0"
links_ok "$LABEL"
log "the filesystem on /dev/cache0 has its /dev/disk/by-uuid link"

# ---- make-cache --status: one snapshot, and JSON for exporters ------------

"$MC" --status >/tmp/status.txt || fail "make-cache --status failed"
grep -q "^cache0: $LABEL, backing md0 (uuid $buuid, set $set_uuid), writeback, state " /tmp/status.txt ||
	fail "--status does not show cache0: $(cat /tmp/status.txt)"
grep -q "^cache set $set_uuid on ${BKC_SSD#/dev/}: " /tmp/status.txt ||
	fail "--status does not show the set: $(cat /tmp/status.txt)"
"$MC" --status --json >/tmp/status.json || fail "make-cache --status --json failed"
python3 -m json.tool /tmp/status.json >/dev/null || fail "--status --json is not JSON: $(cat /tmp/status.json)"
python3 - "$set_uuid" "$buuid" "$LABEL" "${BKC_SSD#/dev/}" <<'PY' || fail "--status --json: $(cat /tmp/status.json)"
import json, sys
set_uuid, buuid, label, ssd = sys.argv[1:]
j = json.load(open("/tmp/status.json"))
assert j["loaded"] is True
s, = [s for s in j["sets"] if s["uuid"] == set_uuid]
assert s["cache_device"] == ssd and s["backing_devices"] == ["md0"], s
assert s["io_errors"] == 0 and s["nbuckets"] > 0 and s["written_bytes"] > 0, s
d, = [d for d in j["devices"] if d["uuid"] == buuid]
assert d["backing_device"] == "md0" and d["cache_device"] == "cache0", d
assert d["set_uuid"] == set_uuid and d["label"] == label, d
assert d["cache_mode"] == "writeback" and d["state"] in ("clean", "dirty"), d
assert d["dirty_bytes"] >= 0 and d["lost_dirty"] is False, d
PY
log "--status: $(head -n1 /tmp/status.txt | cut -c1-100)...; --status --json parses and agrees"

# ---- stop, the other order -----------------------------------------------

echo 1 >/sys/block/cache0/cache/stop
wait_gone /dev/cache0 30
echo 1 >"/sys/fs/blkcache/$set_uuid/stop"
wait_gone "/sys/fs/blkcache/$set_uuid" 30
settled
[ ! -e "/dev/cache/by-uuid/$buuid" ] || fail "the by-uuid link outlived /dev/cache0"
rmmod blkcache || fail "rmmod blkcache failed"
udevadm trigger --action=change --sysname-match=md0
settled
[ -e /sys/block/md0/cache ] || fail "md0 was not registered by udev"
[ ! -e /dev/cache0 ] || fail "/dev/cache0 came up without its cache set"
udevadm trigger --action=change --sysname-match="${BKC_SSD#/dev/}"
settled
wait_for /dev/cache0 30
links_ok "$LABEL"
log "after stop, md0 first then the SSD: /dev/cache0 and the links are back"

# ---- a label change moves the link ------------------------------------------

echo t40new >/sys/block/cache0/cache/label
settled
links_ok t40new
[ ! -e "/dev/cache/by-label/$LABEL" ] || fail "the old by-label link stayed"
log "label change: /dev/cache/by-label/t40new, the old link gone"

# ---- make-cache --flush and --detach ---------------------------------------

A=/sys/block/cache0/cache
echo 100 >"$A/writeback_percent"
echo 1M >"$A/writeback_rate_max"
fio --output=/tmp/fio.out --eta=never --name=w --filename=/dev/cache0 --direct=1 \
	--rw=randwrite --bs=4k --size=8m --ioengine=libaio --iodepth=8 ||
	{ cat /tmp/fio.out; fail "fio failed"; }
[ "$(cat "$A/dirty_data")" != 0 ] || fail "no dirty data to flush"
"$MC" --flush /dev/cache0 >/tmp/flush.out 2>&1 ||
	fail "make-cache --flush failed: $(cat /tmp/flush.out)"
[ "$(cat "$A/dirty_data")" = 0 ] || fail "--flush returned with $(cat "$A/dirty_data") dirty"
if [ "$(cat "$A/writeback_percent")" != 100 ] ||
   [ "$(cat "$A/writeback_rate_max")" != 1M ]; then
	fail "--flush did not restore the tunables: percent $(cat "$A/writeback_percent"), rate_max $(cat "$A/writeback_rate_max")"
fi
log "--flush: $(tail -n1 /tmp/flush.out); tunables restored"
fio --output=/tmp/fio.out --eta=never --name=w --filename=/dev/cache0 --direct=1 \
	--rw=randwrite --bs=4k --size=4m --offset=64m --ioengine=libaio --iodepth=8 ||
	{ cat /tmp/fio.out; fail "fio failed"; }
"$MC" --detach /dev/md0 >/tmp/detach.out 2>&1 ||
	fail "make-cache --detach failed: $(cat /tmp/detach.out)"
[ "$(cat "$A/state")" = "no cache" ] || fail "--detach left state '$(cat "$A/state")'"
[ "$(cat "$A/set_uuid")" = "" ] || fail "--detach left set_uuid $(cat "$A/set_uuid")"
log "--detach: $(tail -n1 /tmp/detach.out)"

# ---- tunables survive registration (kept in the backing superblock) -------

# what is written, and what reads back
declare -A TUN=([sequential_cutoff]=8M [writeback_percent]=33
	[writeback_delay]=7 [writeback_rate_max]=2M [writeback_max_age]=60)
for t in "${!TUN[@]}"; do
	echo "${TUN[$t]}" >"$A/$t" || fail "writing ${TUN[$t]} to $t refused"
done
TUN[sequential_cutoff]=8.0M
"$MC" --show /dev/md0 | grep -x "writeback_percent: 33" >/dev/null ||
	fail "the backing superblock does not record writeback_percent: $("$MC" --show /dev/md0)"
echo 1 >"$A/stop"
wait_gone /dev/cache0 30
settled
udevadm trigger --action=change --sysname-match=md0
settled
wait_for /dev/cache0 30
for t in "${!TUN[@]}"; do
	[ "$(cat "$A/$t")" = "${TUN[$t]}" ] ||
		fail "$t reads $(cat "$A/$t") after registration, not ${TUN[$t]}"
done
log "tunables after stop and registration: $(for t in "${!TUN[@]}"; do printf '%s=%s ' "$t" "$(cat "$A/$t")"; done)"

# ---- a root filesystem on /dev/cache0, for the second boot ---------------

# attached again, writeback paused, so that the root is dirty in the cache
echo "$set_uuid" >"$A/attach" || fail "attach failed"
echo 100 >"$A/writeback_percent"
echo 0 >"$A/writeback_max_age"
mkfs.xfs -q -f -L bkcroot /dev/cache0
R=/mnt/root
mkdir -p "$R"
mount /dev/cache0 "$R" || fail "cannot mount /dev/cache0"
mkdir -p "$R"/{bin,sbin,dev,proc,sys,run,mnt}
cp /bin/busybox "$R/bin/busybox"
head -c 8M /dev/urandom >"$R/data"
(cd "$R" && md5sum data >data.md5)
# /sbin/init of that root (busybox): checks that it runs from /dev/cache0,
# attached and dirty, that the data reads back, that the kernel log is
# clean, and reports through the results share
cat >"$R/sbin/init" <<INIT
#!/bin/busybox sh
B=/bin/busybox
rc=0
say() { echo "bkc-root: \$*"; }
check() {
	if eval "\$1"; then say "ok: \$2"; else say "FAIL: \$2"; rc=1; fi
}
echo "bkc-vm: running the root filesystem's /sbin/init"
if ! \$B mount -t 9p -o trans=virtio,version=9p2000.L results /mnt; then
	say "FATAL: cannot mount the results share"
	\$B poweroff -f
fi
check '\$B grep -q "^/dev/cache0 / xfs " /proc/mounts' "the root is XFS on /dev/cache0"
check '[ "\$(\$B cat /sys/block/cache0/cache/state)" = dirty ]' "/dev/cache0 is attached, state dirty"
check '[ "\$(\$B cat /sys/block/cache0/cache/set_uuid)" = $set_uuid ]' "attached to set $set_uuid"
check '[ "\$(\$B cat /sys/block/cache0/cache/backing_dev_uuid)" = $buuid ]' "backed by $buuid"
check '(cd / && \$B md5sum -c -s data.md5)' "8 MiB written in the first boot read back"
\$B cat /proc/mounts >/mnt/root-mounts.txt
\$B dmesg >/mnt/root-dmesg.txt
check '! \$B grep -qE "BUG:|Oops|WARNING:|Call Trace|blocked for more than" /mnt/root-dmesg.txt' "the kernel log is clean"
echo \$rc >/mnt/.bkc/status
\$B sync
\$B umount /mnt
\$B poweroff -f
INIT
chmod 755 "$R/sbin/init"
umount "$R"
[ "$(cat "$A/state")" = dirty ] || fail "the root is not dirty in the cache: state $(cat "$A/state")"
log "root filesystem on /dev/cache0: busybox init, 8 MiB of data, $(cat "$A/dirty_data") dirty"

echo 1 >/sys/block/cache0/cache/stop
wait_gone /dev/cache0 30
echo 1 >"/sys/fs/blkcache/$set_uuid/stop"
wait_gone "/sys/fs/blkcache/$set_uuid" 30
settled
rmmod blkcache || fail "rmmod blkcache failed"
stop_raid

# the host (tests/vm/install-run) builds an initramfs with mkinitramfs and
# the installed hook, and boots it with these arguments
printf '%s\n' 9p 9pnet_virtio xfs raid456 >"$BKC_RESULTS/next-boot-modules"
echo "root=/dev/cache0 rootfstype=xfs" >"$BKC_RESULTS/next-boot"
log "second boot: root=/dev/cache0 from an initramfs made by mkinitramfs"
