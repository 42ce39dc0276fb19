# SPDX-License-Identifier: GPL-2.0
#
# blkcache top-level build.
#   make                 blkcache.ko and make-cache
#   make KVER=<version>  build the module for another installed kernel
#   make KDIR=<dir>      build against an explicit kernel build tree
#   make demo            install deps, build, boot a VM, show the cache working
#   make check           the whole test suite (what .ci/run runs)
#   make install         the module, make-cache, udev rules, initramfs pieces
#                        and man pages (DESTDIR, PREFIX; see below)
#   make uninstall       remove exactly what install put there

ifneq ($(KVER),)
KDIR ?= /lib/modules/$(KVER)/build
else
KDIR ?= $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
	$(shell ls -d /lib/modules/*-amd64/build 2>/dev/null | sort -V | tail -n1))
KVER := $(patsubst /lib/modules/%/build,%,$(KDIR))
endif

CC ?= gcc
USER_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter \
	-Wno-missing-field-initializers -D_GNU_SOURCE \
	-Iinclude/uapi -Itools/lib -Idrivers/blkcache/core
MAKE_CACHE := tools/make-cache/make-cache
MAKE_CACHE_SRC := tools/make-cache/make-cache.c tools/make-cache/size.c \
	tools/make-cache/probe.c tools/make-cache/status.c tools/make-cache/flush.c \
	tools/make-cache/sysfs.c \
	drivers/blkcache/core/sb.c tools/lib/crc32c.c
MAKE_CACHE_HDR := $(wildcard tools/make-cache/*.h) tools/lib/bkc_shim.h \
	drivers/blkcache/core/sb.h drivers/blkcache/core/bkc_port.h \
	include/uapi/linux/blkcache.h

.PHONY: all module tools clean check demo kver kdir deps install uninstall \
	install-files

all: module tools

module:
	@test -d "$(KDIR)" || { echo "no kernel headers found (KDIR=$(KDIR)); run scripts/install-deps" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

SBEDIT := tests/vm/sbedit
CRASH_IO := tests/vm/crash-io
POISON_IO := tests/vm/poison-io
RWCHECK := tests/vm/rwcheck
METAMAP := tests/vm/metamap
METAMAP_SRC := tests/vm/metamap.c \
	$(addprefix drivers/blkcache/core/,sb.c key.c bset.c btree.c alloc.c \
	policy.c journal.c table.c core.c gc.c decay.c) tools/lib/crc32c.c

tools: $(MAKE_CACHE) $(SBEDIT) $(CRASH_IO) $(POISON_IO) $(RWCHECK) $(METAMAP)

$(SBEDIT): tests/vm/sbedit.c drivers/blkcache/core/sb.c tools/lib/crc32c.c \
		$(MAKE_CACHE_HDR)
	$(CC) $(USER_CFLAGS) -o $@ $(filter %.c,$^)

$(CRASH_IO): tests/vm/crash-io.c
	$(CC) $(USER_CFLAGS) -pthread -o $@ $<

$(POISON_IO): tests/vm/poison-io.c tests/vm/xorshift.h
	$(CC) $(USER_CFLAGS) -pthread -o $@ $<

$(RWCHECK): tests/vm/rwcheck.c tests/vm/xorshift.h
	$(CC) $(USER_CFLAGS) -o $@ $<

$(METAMAP): $(METAMAP_SRC) $(wildcard drivers/blkcache/core/*.h) \
		$(MAKE_CACHE_HDR)
	$(CC) $(USER_CFLAGS) -o $@ $(METAMAP_SRC)

$(MAKE_CACHE): $(MAKE_CACHE_SRC) $(MAKE_CACHE_HDR)
	$(CC) $(USER_CFLAGS) -o $@ $(MAKE_CACHE_SRC) -lblkid -luuid

kver:
	@echo $(KVER)

kdir:
	@echo $(KDIR)

deps:
	scripts/install-deps

check:
	scripts/check

demo:
	scripts/demo

# ---- install ---------------------------------------------------------------
# PREFIX (default /usr) holds make-cache and the man pages.  The module goes
# to /lib/modules/<KVER>/updates/ and the udev rules to UDEVDIR, the
# initramfs-tools pieces to INITRAMFS_DIR, wherever PREFIX is, because that
# is where depmod, udev and mkinitramfs look.  With DESTDIR (a staging tree)
# depmod is left to whoever installs the tree.
PREFIX ?= /usr
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
UDEVDIR ?= /usr/lib/udev
INITRAMFS_DIR ?= /usr/share/initramfs-tools
MODDIR := /lib/modules/$(KVER)/updates
KO := drivers/blkcache/blkcache.ko
RULES := tools/udev/69-blkcache.rules
MANPAGES := $(wildcard Documentation/man/*.[1-8])
INITRAMFS_FILES := $(wildcard tools/initramfs/hooks/* \
	tools/initramfs/scripts/*/*)

# Every file install writes, relative to DESTDIR: what uninstall removes.
INSTALLED := $(MODDIR)/blkcache.ko $(SBINDIR)/make-cache \
	$(UDEVDIR)/rules.d/69-blkcache.rules \
	$(foreach m,$(MANPAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m))) \
	$(patsubst tools/initramfs/%,$(INITRAMFS_DIR)/%,$(INITRAMFS_FILES))

# Where the installed pieces find make-cache.
SUBST := sed -e 's|/usr/sbin/make-cache|$(SBINDIR)/make-cache|g' \
	-e 's|/usr/lib/udev/|$(UDEVDIR)/|g'

install: install-files
ifeq ($(DESTDIR),)
	depmod -a $(KVER)
else
	@echo "note: DESTDIR set: run depmod -a $(KVER) once the tree is in place"
endif

install-files:
	@test -f $(KO) -a -f $(MAKE_CACHE) || { echo "$(KO) or $(MAKE_CACHE) missing: run make first" >&2; exit 1; }
	@test "$$(modinfo -F vermagic $(KO) | cut -d' ' -f1)" = "$(KVER)" || { echo "$(KO) is not built for $(KVER): make KVER=$(KVER)" >&2; exit 1; }
	install -D -m 0644 $(KO) $(DESTDIR)$(MODDIR)/blkcache.ko
	install -D -m 0755 $(MAKE_CACHE) $(DESTDIR)$(SBINDIR)/make-cache
	install -d $(DESTDIR)$(UDEVDIR)/rules.d
	$(SUBST) $(RULES) >$(DESTDIR)$(UDEVDIR)/rules.d/69-blkcache.rules
	chmod 0644 $(DESTDIR)$(UDEVDIR)/rules.d/69-blkcache.rules
	@set -e; for m in $(MANPAGES); do \
		sec=$${m##*.}; \
		echo "install -D -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$sec/$${m##*/}"; \
		install -D -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$sec/$${m##*/}; \
	done
	@set -e; for f in $(INITRAMFS_FILES); do \
		d=$(DESTDIR)$(INITRAMFS_DIR)/$${f#tools/initramfs/}; \
		echo "install $$f -> $$d"; \
		install -d $${d%/*}; \
		$(SUBST) $$f >$$d; chmod 0755 $$d; \
	done

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(MODDIR) 2>/dev/null
ifeq ($(DESTDIR),)
	depmod -a $(KVER)
endif

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean >/dev/null 2>&1
	rm -f $(MAKE_CACHE) $(SBEDIT) $(CRASH_IO) $(POISON_IO) $(RWCHECK) \
		$(METAMAP)
	$(MAKE) -C tests/unit clean 2>/dev/null || true
