# Offline GPU trace analysis toolkit.  `make help` lists the targets.
#
#   make                 build the tools into $(BUILD)/bin
#   make test            install missing build deps, build, run every test
#                        (plain and under ASan+UBSan)
#   make demo            ingest the bundled sample and print its table
#   make SAN=address,undefined   sanitizer build (in build-san/)
#   make DEBUG=1         -O0 -g -Werror build (in build-debug/)
#   make V=1             show the commands

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
SAN     ?=
DEBUG   ?=
V       ?=

BUILD ?= build$(if $(SAN),-san)$(if $(DEBUG),-debug)

PKGS := sqlite3 libpcre2-8 libcjson cunit zlib libdw
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs sqlite3 libpcre2-8 libcjson zlib libdw 2>/dev/null)
CUNIT_LIBS := $(shell pkg-config --libs cunit 2>/dev/null || echo -lcunit)

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers
CFLAGS  ?= $(if $(DEBUG),-O0 -g3,-O2 -g)
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(if $(DEBUG),-Werror) $(CFLAGS) \
              -iquote . $(PKG_CFLAGS) -MMD -MP
ifneq ($(SAN),)
ALL_CFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_LDFLAGS := -fsanitize=$(SAN)
endif
ALL_LDFLAGS := $(LDFLAGS) $(SAN_LDFLAGS)
LIBS := $(PKG_LIBS) -lstdc++ -lm -lpthread

Q := $(if $(V),,@)
say = $(if $(V),,@printf '  %-8s %s\n' $(1) $(2);)

# The core library: everything except the tools' mains.
CORE_DIRS ?= lib ingest ingest/readers analyze export
CORE_SRC := $(filter-out %/main.c,$(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.c)))
CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/obj/%.o)
CORE_LIB := $(BUILD)/libtracekit.a

TOOLS := trace-ingest trace-analyze
TOOL_MAIN_trace-ingest := ingest/main.c
TOOL_MAIN_trace-analyze := analyze/main.c
ifneq ($(and $(filter export,$(CORE_DIRS)),$(wildcard export/main.c)),)
TOOLS += trace-export
TOOL_MAIN_trace-export := export/main.c
endif
TOOL_BINS := $(TOOLS:%=$(BUILD)/bin/%)

UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(BUILD)/tests/unit-tests
GEN_NVPROF := $(BUILD)/bin/gen-nvprof
BENCH_TOOLS := $(BUILD)/bin/gen-kineto $(BUILD)/bin/gen-raw $(BUILD)/bin/measure

SAMPLE := sample-traces/lm-step.nvvp

-include record/record.mk

.PHONY: all setup test check unit cli demo bench bench-smoke install uninstall clean help fuzz fuzz-replay man
all: $(TOOL_BINS) $(GEN_NVPROF) $(BENCH_TOOLS) $(RECORD_TARGETS)

setup:
	$(Q)scripts/setup-deps.sh

$(BUILD)/obj/%.o: %.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(CORE_LIB): $(CORE_OBJ)
	$(call say,AR,$@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/bin/%: $(BUILD)/obj/%.o
$(foreach t,$(TOOLS),$(eval $(BUILD)/bin/$(t): $(TOOL_MAIN_$(t):%.c=$(BUILD)/obj/%.o) $(CORE_LIB) ; \
	$$(call say,LD,$$@) mkdir -p $$(dir $$@) && $$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$(LIBS)))

$(GEN_NVPROF): $(BUILD)/obj/bench/gen-nvprof.o $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# gen-raw --stacks loads libraries and reads their symbols: dlopen and dladdr1
# live in libdl before glibc 2.34
BENCH_LIBS_gen-raw := -ldl
$(BENCH_TOOLS): $(BUILD)/bin/%: $(BUILD)/obj/bench/%.o
	$(call say,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(BENCH_LIBS_$*)

$(UNIT_BIN): $(UNIT_SRC:%.c=$(BUILD)/obj/%.o) $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CUNIT_LIBS) $(LIBS)

# `check` runs the suites on an existing build; `test` is the full job.
check: all $(UNIT_BIN)
	$(Q)$(UNIT_BIN)
	$(Q)BIN=$(BUILD)/bin tests/cli/run.sh
	$(Q)$(if $(RECORD_TEST),$(RECORD_TEST))

test:
	$(Q)WITH_TEST_TOOLS=1 scripts/setup-deps.sh
	$(Q)$(MAKE) --no-print-directory check
	$(Q)$(MAKE) --no-print-directory check SAN=address,undefined
	$(Q)$(MAKE) --no-print-directory fuzz-replay
	$(Q)$(MAKE) --no-print-directory bench-smoke

# libFuzzer targets (tests/fuzz/fuzz_*.c), built with clang into $(FUZZ_BUILD)/.
FUZZ_BUILD ?= build-fuzz
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_BUILD)/fuzz/%)
FUZZ_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
fuzz:
	$(Q)$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang \
	    CFLAGS="-O1 -g -fsanitize=fuzzer-no-link $(FUZZ_FLAGS)" $(FUZZ_BINS)
$(FUZZ_BUILD)/fuzz/%: tests/fuzz/%.c $(CORE_LIB)
	$(call say,FUZZ,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer $(FUZZ_FLAGS) -o $@ $< $(CORE_LIB) $(LIBS)
# Replays each target's seed corpus (no mutation): keeps the targets building and the seeds clean.
fuzz-replay: fuzz
	$(Q)for f in $(FUZZ_BINS); do n=$${f##*/fuzz_}; \
	    $$f -runs=0 tests/fuzz/corpus/$$n >/dev/null 2>&1 || { echo "fuzz: $$f failed on its corpus"; exit 1; }; \
	    echo "fuzz: $$n corpus clean"; done

demo: setup
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(BUILD)/bin/trace-ingest -q -o $(BUILD)/demo.db $(SAMPLE)
	$(Q)$(BUILD)/bin/trace-analyze --limit 15 $(BUILD)/demo.db
	$(Q)$(if $(wildcard export/main.c),$(BUILD)/bin/trace-export --flamegraph -o $(BUILD)/demo.svg $(BUILD)/demo.db && echo "flamegraph: $(BUILD)/demo.svg")

bench:
	$(Q)WITH_BENCH_TOOLS=1 scripts/setup-deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BIN=$(BUILD)/bin bench/run.sh

# every step of the benchmark at 10^5 events, so it cannot rot; no figures are judged
bench-smoke: all
	$(Q)BENCH_SMOKE=1 BIN=$(BUILD)/bin bench/run.sh >/dev/null

# Manual pages: each tool's is made from its own --help (scripts/mkman.sh), so
# the two cannot drift; run.db(5) from docs/schema.md.
MAN_DIR := $(BUILD)/man
MAN1 := $(TOOLS:%=$(MAN_DIR)/%.1) $(if $(RECORD_TARGETS),$(MAN_DIR)/trace-record.1)
MAN5 := $(MAN_DIR)/run.db.5
MAN_SUMMARY_trace-ingest := read GPU traces (nvprof, Kineto, Nsight Systems, recordings) into a run database
MAN_SUMMARY_trace-analyze := PyTorch key_averages()-style tables and timeline reports from a run database
MAN_SUMMARY_trace-export := folded stacks, flamegraph SVGs and chrome traces from a run database
MAN_SUMMARY_trace-record := record a CUDA or PyTorch program's GPU activity into a run database
MAN_EXTRA_trace-analyze = REPORTS "$(BUILD)/bin/trace-analyze --report list" \
    LISTS "$(BUILD)/bin/trace-analyze --list list"
MAN_ENV := DOCDIR=$(PREFIX)/share/doc/tracekit
COMPLETION := completion/trace-tools.bash
COMPLETION_DIR := $(PREFIX)/share/bash-completion/completions
man: $(MAN1) $(MAN5)
$(MAN_DIR)/%.1: $(BUILD)/bin/% scripts/mkman.sh
	$(call say,MAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(MAN_ENV) scripts/mkman.sh $< "$(MAN_SUMMARY_$*)" $(MAN_EXTRA_$*) >$@.tmp && mv $@.tmp $@
$(MAN_DIR)/run.db.5: docs/schema.md scripts/md2man.sh
	$(call say,MAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)scripts/md2man.sh run.db 5 "the run database of tracekit (SQLite)" $< >$@.tmp && mv $@.tmp $@

# Everything from $(BUILD): `make install BUILD=build-x` installs that build.
# bash-completion loads a file by the command's name: one file, a link per tool.
install: all man
	$(Q)install -d $(DESTDIR)$(PREFIX)/bin
	$(Q)install -m 755 $(TOOL_BINS) $(DESTDIR)$(PREFIX)/bin/
	$(Q)$(if $(RECORD_TARGETS),install -m 755 $(BUILD)/bin/trace-record $(DESTDIR)$(PREFIX)/bin/ && \
	    install -d $(DESTDIR)$(PREFIX)/lib && \
	    install -m 755 $(BUILD)/lib/libtracekit-agent.so $(DESTDIR)$(PREFIX)/lib/)
	$(Q)install -d $(DESTDIR)$(PREFIX)/share/doc/tracekit
	$(Q)install -m 644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/tracekit/
	$(Q)install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5
	$(Q)install -m 644 $(MAN1) $(DESTDIR)$(PREFIX)/share/man/man1/
	$(Q)install -m 644 $(MAN5) $(DESTDIR)$(PREFIX)/share/man/man5/
	$(Q)install -d $(DESTDIR)$(COMPLETION_DIR)
	$(Q)install -m 644 $(COMPLETION) $(DESTDIR)$(COMPLETION_DIR)/trace-ingest
	$(Q)for t in trace-analyze trace-export trace-record; do \
	    ln -sf trace-ingest $(DESTDIR)$(COMPLETION_DIR)/$$t || exit 1; done

uninstall:
	$(Q)rm -f $(TOOLS:%=$(DESTDIR)$(PREFIX)/bin/%) $(DESTDIR)$(PREFIX)/bin/trace-record \
	    $(DESTDIR)$(PREFIX)/lib/libtracekit-agent.so
	$(Q)rm -rf $(DESTDIR)$(PREFIX)/share/doc/tracekit
	$(Q)rm -f $(TOOLS:%=$(DESTDIR)$(PREFIX)/share/man/man1/%.1) $(DESTDIR)$(PREFIX)/share/man/man1/trace-record.1 \
	    $(DESTDIR)$(PREFIX)/share/man/man5/run.db.5
	$(Q)rm -f $(foreach t,trace-ingest trace-analyze trace-export trace-record,$(DESTDIR)$(COMPLETION_DIR)/$(t))

clean:
	rm -rf build build-san build-debug build-san-debug $(FUZZ_BUILD)

help:
	@echo "targets:"
	@echo "  all        build the tools (trace-ingest, trace-analyze, ...) into $(BUILD)/bin"
	@echo "  setup      install missing Debian build dependencies (apt-get, as root)"
	@echo "  test       setup, build, run unit + CLI tests, then again under ASan+UBSan"
	@echo "  check      run the tests on the current build only"
	@echo "  demo       setup, build, ingest the bundled sample, print the table"
	@echo "  bench      measure speed and memory (prints figures, never fails on time)"
	@echo "  install    install to DESTDIR/PREFIX (PREFIX=$(PREFIX)): tools, man pages, bash completion"
	@echo "  man        the manual pages, from the tools' --help and docs/schema.md, into $(BUILD)/man"
	@echo "  clean      remove build directories"
	@echo "variables: SAN=address,undefined  DEBUG=1 (-Werror)  V=1  PREFIX=  DESTDIR=  BUILD="

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
