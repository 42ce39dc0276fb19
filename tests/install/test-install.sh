#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/install/test-install.sh - `make install` into a staging tree, and
# `dkms build` for every installed Debian kernel, on the host.
#   - make install DESTDIR=<tmp> PREFIX=<p> puts exactly the expected files
#     there (module under /lib/modules/<kver>/updates, make-cache under
#     <p>/sbin, the udev rules with <p>/sbin/make-cache in them, the man
#     pages, the initramfs-tools pieces) and nothing else;
#   - make uninstall with the same variables leaves no file behind;
#   - both man pages pass groff -ww -z and man --warnings;
#   - dkms add/build (from a copy of the tree) builds blkcache.ko for each
#     kernel with headers, and dkms remove undoes it.
# Runs after `make` (the build stage).  Exits non-zero on any failure.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
T=$(mktemp -d /tmp/bkc-install.XXXXXX)
KVER=$(make -s -C "$REPO" kver)
VERSION=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$REPO/dkms.conf")
DKMS_ADDED=
# shellcheck source=tests/lib/check.sh
. "$REPO/tests/lib/check.sh"

cleanup() {
	if [ -n "$DKMS_ADDED" ]; then
		dkms remove -q "blkcache/$VERSION" --all >/dev/null 2>&1 || true
		rm -rf "/usr/src/blkcache-$VERSION"
	fi
	rm -rf "$T"
}
trap cleanup EXIT

# ---- make install / uninstall ------------------------------------------------

D=$T/root
P=/opt/bkc
make -s -C "$REPO" install DESTDIR="$D" PREFIX="$P" >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log"; fail "make install DESTDIR=$D PREFIX=$P failed"; }
(cd "$D" && find . -type f | sed 's|^\.||' | sort) >"$T/got"
{
	echo "/lib/modules/$KVER/updates/blkcache.ko"
	echo "$P/sbin/make-cache"
	echo "$P/share/man/man4/blkcache.4"
	echo "$P/share/man/man8/make-cache.8"
	echo "/usr/lib/udev/rules.d/69-blkcache.rules"
	echo "/usr/share/initramfs-tools/hooks/blkcache"
	echo "/usr/share/initramfs-tools/scripts/local-top/blkcache"
	echo "/usr/share/initramfs-tools/scripts/local-block/blkcache"
} | sort >"$T/want"
if cmp -s "$T/got" "$T/want"; then
	pass "make install DESTDIR PREFIX: the expected $(wc -l <"$T/want") files"
else
	fail "make install DESTDIR PREFIX: other files" "$(diff "$T/want" "$T/got" | tr '\n' ' ')"
fi
sed -n 's/^/      /p' "$T/got"
R=$D/usr/lib/udev/rules.d/69-blkcache.rules
if grep -q "$P/sbin/make-cache --probe" "$R" && ! grep -q '/usr/sbin/make-cache' "$R"; then
	pass "the installed rules run $P/sbin/make-cache"
else
	fail "the installed rules do not name $P/sbin/make-cache"
fi
I=$D/usr/share/initramfs-tools
if grep -q "copy_exec $P/sbin/make-cache" "$I/hooks/blkcache" &&
   grep -q "$P/sbin/make-cache --probe" "$I/scripts/local-block/blkcache" &&
   ! grep -q '/usr/sbin/make-cache' "$I/hooks/blkcache" "$I/scripts/local-block/blkcache"; then
	pass "the installed initramfs hook and script use $P/sbin/make-cache"
else
	fail "the installed initramfs pieces do not name $P/sbin/make-cache"
fi
for f in "$I/hooks/blkcache" "$I"/scripts/local-*/blkcache; do
	if [ -x "$f" ] && [ "$(sh "$f" prereqs)" = "$(sed -n 's/^PREREQ="\(.*\)"$/\1/p' "$f")" ]; then
		pass "${f#"$I"/} is executable and answers prereqs"
	else
		fail "${f#"$I"/} is not executable or does not answer prereqs"
	fi
done
if [ "$(modinfo -F vermagic "$D/lib/modules/$KVER/updates/blkcache.ko" | cut -d' ' -f1)" = "$KVER" ] &&
   cmp -s "$D$P/sbin/make-cache" "$REPO/tools/make-cache/make-cache"; then
	pass "the installed module and make-cache are the built ones"
else
	fail "the installed module or make-cache differ from the build"
fi
if grep -q "depmod" "$T/install.log" && ! [ -e "$D/lib/modules/$KVER/modules.dep" ]; then
	pass "with DESTDIR, depmod is left to the installer (and said so)"
else
	fail "make install DESTDIR ran depmod into the tree, or said nothing"
fi
make -s -C "$REPO" uninstall DESTDIR="$D" PREFIX="$P" >"$T/uninstall.log" 2>&1 ||
	{ cat "$T/uninstall.log"; fail "make uninstall failed"; }
left=$(cd "$D" && find . -type f | wc -l)
if [ "$left" = 0 ]; then
	pass "make uninstall removed every file install put there"
else
	fail "make uninstall left $left files" "$(cd "$D" && find . -type f | tr '\n' ' ')"
fi

# ---- man pages -------------------------------------------------------------

for m in "$REPO"/Documentation/man/*.[1-8]; do
	w=$( { groff -ww -z -man "$m"; MANWIDTH=80 man --warnings -l "$m" >/dev/null; } 2>&1)
	if [ -z "$w" ]; then
		pass "${m##*/}: groff -ww -z and man --warnings are clean"
	else
		fail "${m##*/}: warnings" "$w"
	fi
done

# ---- dkms --------------------------------------------------------------------

if ! command -v dkms >/dev/null; then
	fail "dkms is not installed (scripts/install-deps)"
else
	# the tree as a release would ship it: no build products
	S=/usr/src/blkcache-$VERSION
	rm -rf "$S"
	mkdir -p "$S"
	git -C "$REPO" ls-files -z | (cd "$REPO" && xargs -0 cp --parents -t "$S")
	DKMS_ADDED=1
	if dkms add -q "blkcache/$VERSION" >"$T/dkms.log" 2>&1; then
		pass "dkms add blkcache/$VERSION"
	else
		fail "dkms add failed" "$(tail -5 "$T/dkms.log")"
	fi
	for d in /lib/modules/*-amd64/build; do
		[ -d "$d" ] || continue
		k=${d#/lib/modules/}
		k=${k%/build}
		if dkms build -q "blkcache/$VERSION" -k "$k" >"$T/dkms-$k.log" 2>&1 &&
		   ko=$(find "/var/lib/dkms/blkcache/$VERSION/$k" -name 'blkcache.ko*' | head -n1) &&
		   [ -n "$ko" ] &&
		   [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$k" ]; then
			pass "dkms build for $k"
		else
			fail "dkms build for $k" "$(tail -5 "$T/dkms-$k.log")"
		fi
	done
fi

check_summary "install tests"
