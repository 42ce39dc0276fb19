# SPDX-License-Identifier: GPL-2.0
#
# blkcache top-level build.
#   make                 blkcache.ko and make-cache
#   make KVER=<version>  build the module for another installed kernel
#   make KDIR=<dir>      build against an explicit kernel build tree
#   make demo            install deps, build, boot a VM, show the cache working
#   make check           the whole test suite (what .ci/run runs)

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
	tools/make-cache/probe.c \
	drivers/blkcache/core/sb.c tools/lib/crc32c.c
MAKE_CACHE_HDR := $(wildcard tools/make-cache/*.h) tools/lib/bkc_shim.h \
	drivers/blkcache/core/sb.h drivers/blkcache/core/bkc_port.h \
	include/uapi/linux/blkcache.h

.PHONY: all module tools clean check demo kver kdir deps

all: module tools

module:
	@test -d "$(KDIR)" || { echo "no kernel headers found (KDIR=$(KDIR)); run scripts/install-deps" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

SBEDIT := tests/vm/sbedit
CRASH_IO := tests/vm/crash-io
POISON_IO := tests/vm/poison-io
METAMAP := tests/vm/metamap
METAMAP_SRC := tests/vm/metamap.c \
	$(addprefix drivers/blkcache/core/,sb.c key.c bset.c btree.c alloc.c \
	policy.c journal.c table.c core.c gc.c decay.c) tools/lib/crc32c.c

tools: $(MAKE_CACHE) $(SBEDIT) $(CRASH_IO) $(POISON_IO) $(METAMAP)

$(SBEDIT): tests/vm/sbedit.c drivers/blkcache/core/sb.c tools/lib/crc32c.c \
		$(MAKE_CACHE_HDR)
	$(CC) $(USER_CFLAGS) -o $@ $(filter %.c,$^)

$(CRASH_IO): tests/vm/crash-io.c
	$(CC) $(USER_CFLAGS) -pthread -o $@ $<

$(POISON_IO): tests/vm/poison-io.c
	$(CC) $(USER_CFLAGS) -pthread -o $@ $<

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

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean >/dev/null 2>&1
	rm -f $(MAKE_CACHE) $(SBEDIT) $(CRASH_IO) $(POISON_IO) $(METAMAP)
	$(MAKE) -C tests/unit clean 2>/dev/null || true
