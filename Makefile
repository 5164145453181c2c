# eeb - the edge energy benchmark.
#
#   make deps    install the Debian packages eeb needs (apt-get; sudo if not root)
#   make         build build/eeb
#   make check   run the Criterion suite (gcc), replay the fuzz corpora, fuzz
#                each target FUZZ_SECONDS (make fuzz), then make asan and make
#                valgrind
#   make asan    run the suite under AddressSanitizer + UndefinedBehaviorSanitizer
#                (clang's: the second compiler's warnings too)
#   make valgrind  memcheck on the plain build: every parser's fuzz inputs, the
#                in-process suites, and one whole eeb run, check and report
#   make fuzz    run every libFuzzer target (clang) FUZZ_SECONDS each (default 30)
#   make demo    the embedded default run: demo.db and demo.html
#   make demo-xrt the same through XRT's noop shim: demo-xrt.db and demo-xrt.html
#   make bench   run the benchmarks in tests/bench (BENCH lines on stdout)
#   make lint    clang-format check and cppcheck
#
# BUILD names the output directory, so variants (build/clang, build/asan)
# never mix objects.

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wundef -Wstrict-prototypes
# -fPIC: libeeb's objects also make eeb's own backends a SUT library
# -ffp-contract=off: no multiply-add fused into one rounding, whatever the
# compiler (clang contracts by default), so the analytical model's figures
# are the same bits on the board's ARM cores as on the server
CFLAGS  += -std=c11 -ffp-contract=off $(OPT) $(WARN) -fPIC
CPPFLAGS += -D_GNU_SOURCE -I. -MMD -MP \
            -DEEB_RULES_V1_PATH='"scoring/rules/v1.json"'
LDLIBS  := -lsqlite3 -ljansson -lexpat -lturbojpeg -lavformat -lavcodec -lswscale -lavutil \
           -lopenblas -ldnnl -lsensors -lmicrohttpd -lcurl -lcrypto -larchive -lprotobuf-c -lz \
           -lpthread -ldl -lm

# Every package the project builds, tests or runs against.
DEB_PACKAGES := build-essential clang pkg-config \
    libsqlite3-dev sqlite3 libjansson-dev libcriterion-dev zlib1g-dev \
    libcurl4-openssl-dev libmicrohttpd-dev libsensors-dev lm-sensors \
    libxrt-dev libturbojpeg0-dev libjpeg62-turbo-dev libexpat1-dev \
    libavformat-dev libavcodec-dev libswscale-dev libavutil-dev \
    libdnnl-dev ocl-icd-libopencl1 libopenblas-dev libssl-dev \
    libpng-dev libarchive-dev chromium wrk valgrind python3 \
    libprotobuf-c-dev protobuf-c-compiler libonnx-dev python3-onnx python3-torch \
    clang-format cppcheck

# harness/ is the eeb command (main, cli, cmd_*) over the run lifecycle,
# which is library code the tests drive directly.
CLI_SRC   := harness/main.c harness/cli.c $(wildcard harness/cmd_*.c)
LIB_SRC   := $(wildcard common/*.c scoring/*.c rundb/*.c power/*.c tasks/*.c fpga/kernel/*.c \
                       fpga/net/*.c fpga/fx/*.c fpga/accel/*.c fpga/emu/*.c fpga/ref/*.c \
                       fpga/model/*.c sut/*.c record/*.c server/*.c) \
             $(filter-out $(CLI_SRC),$(wildcard harness/*.c))
TEST_SRC  := $(wildcard tests/*/test_*.c) tests/testlib.c tests/power/meter_emu.c tests/sut/sut_data.c \
             tests/server/fault_proxy.c tests/server/http_client.c tests/server/team_client.c tests/server/arena.c \
             tests/tasks/task_data.c
BENCH_SRC := $(wildcard tests/bench/bench_*.c)
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES := $(patsubst tests/fuzz/%.c,%,$(FUZZ_SRC))

# XRT (libxrt-dev): the xclbin tools and the xrt backend are built when
# its headers are there, else stubs that say so (XRT_STUBS).  Its headers
# want -isystem (they include each other relative to it); -lxrt_core would
# pin the hardware shim, and Debian's xrt.pc is broken, so the flags are
# spelled out.
XRT_INC  := /usr/include/xrt
XRT_STUBS := fpga/xrt/no_xrt.c
XRT_SRC  := $(filter-out $(XRT_STUBS),$(wildcard fpga/tools/*.c fpga/xrt/*.c))
HAVE_XRT := $(wildcard $(XRT_INC)/xrt/xrt_kernel.h)
XRT_LIBDIR := /usr/lib/$(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
ifneq ($(HAVE_XRT),)
LIB_SRC  += $(XRT_SRC)
CPPFLAGS += -DEEB_HAVE_XRT
LDLIBS   += -lxrt_coreutil
else
LIB_SRC  += $(XRT_STUBS)
TEST_SRC := $(filter-out tests/fpga/test_xrt.c tests/fpga/test_xclbin_system.c,$(TEST_SRC))
endif

.DEFAULT_GOAL := all
obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

# ONNX models are protobuf: protoc-c compiles the schema Debian's
# libonnx-dev ships into C for protobuf-c.  The generated file is built
# as eeb's own are, with its dependency file and eeb's warnings (none in
# protoc-c 1.4's output, gcc's or clang's); the files that include its
# header (fpga/net/onnx_*.c: fuzz_onnx.c has only eeb_onnx.h) wait for it.
ONNX_PROTO := /usr/include/onnx/onnx.proto
GEN        := $(BUILD)/gen
ONNX_GEN_H := $(GEN)/onnx/onnx.pb-c.h
ONNX_GEN_O := $(BUILD)/obj/gen/onnx.pb-c.o
ONNX_USERS := $(wildcard fpga/net/onnx_*.c)
$(GEN)/onnx/onnx.pb-c.c $(ONNX_GEN_H) &: $(ONNX_PROTO)
	@mkdir -p $(GEN)
	protoc-c --c_out=$(GEN) -I$(dir $(ONNX_PROTO)).. onnx/onnx.proto
$(ONNX_GEN_O): $(GEN)/onnx/onnx.pb-c.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I$(GEN) $(CFLAGS) -c $< -o $@
$(call obj,$(ONNX_USERS)): CPPFLAGS += -I$(GEN)
$(call obj,$(ONNX_USERS)): | $(ONNX_GEN_H)

LIB     := $(BUILD)/libeeb.a
EEB     := $(BUILD)/eeb
TESTS   := $(BUILD)/tests/eeb-tests
BENCHES := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
REPLAYS := $(patsubst %,$(BUILD)/fuzz-replay/%,$(FUZZ_NAMES))

.PHONY: all deps check test asan valgrind vg-run fuzz replay demo demo-xrt bench lint clean clang-build FORCE
all: $(EEB)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(call obj,$(XRT_SRC) tests/fpga/test_xrt.c): CPPFLAGS += -isystem $(XRT_INC)
$(call obj,tests/fpga/test_xrt.c): CPPFLAGS += -DEEB_XRT_LIBDIR='"$(XRT_LIBDIR)"'

# The kernel's #pragma HLS lines are for Vitis; compilers ignore them.
$(call obj,$(wildcard fpga/kernel/*.c)): CFLAGS += -Wno-unknown-pragmas

# The emulator's loops, and the kernel's element-wise loops it runs on
# parts, are the benchmark's hot path: -O3 vectorizes them.
$(call obj,$(wildcard fpga/kernel/*.c fpga/emu/*.c)): OPT += -O3

# Every run records the build; build.o is recompiled each time so the
# commit it names is never stale.
GIT_DESCRIBE := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/obj/common/build.o: CPPFLAGS += -DEEB_GIT='"$(GIT_DESCRIBE)"'
$(BUILD)/obj/common/build.o: FORCE
FORCE:

# .incbin reads the rules file at assembly time; -MMD cannot see that.
$(BUILD)/obj/scoring/rules_builtin.o: scoring/rules/v1.json

$(LIB): $(call obj,$(LIB_SRC)) $(ONNX_GEN_O)
	@rm -f $@
	$(AR) rcs $@ $^

$(EEB): $(call obj,$(CLI_SRC)) $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The example systems under test (sut/examples), built as a team builds
# one: against sut/eeb_sut.h alone, so without CPPFLAGS; and the SUT
# libraries eeb must refuse (tests/sut/bad_sut.c, one mistake a -D flag),
# which the tests dlopen.
SUT_EXAMPLE_SRC := $(wildcard sut/examples/*.c)
# eeb_sut_serve is a program: any SUT library served over the exec protocol.
SUT_SERVE_SRC := sut/examples/eeb_sut_serve.c
SUT_SERVE := $(BUILD)/sut/eeb_sut_serve
SUT_EXAMPLES := $(patsubst sut/examples/%.c,$(BUILD)/sut/lib%.so,$(filter-out $(SUT_SERVE_SRC),$(SUT_EXAMPLE_SRC)))
SUT_BAD := $(patsubst %,$(BUILD)/tests/sut/libbad_%.so,no_entry null_entry version no_predict v3)
# a version-1 SUT built against this version's header (tests/sut/old_sut.c)
SUT_OLD := $(patsubst %,$(BUILD)/tests/sut/libold_%.so,set edge)
# the SUTs `eeb sut check` must pass (good) and fail (tests/sut/bad_check_sut.c)
SUT_CHECK := $(patsubst %,$(BUILD)/tests/sut/libcheck_%.so,good by_position random untrained slow nan crash hang \
    counters)
# eeb's own backends as a SUT library (sut/plugins), out of libeeb.
SUT_OWN := $(BUILD)/sut/libeeb_backends.so
all: $(SUT_EXAMPLES) $(SUT_OWN)
$(SUT_OWN): sut/plugins/eeb_backends.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) $(LDFLAGS) -shared $< $(LIB) $(LDLIBS) -o $@
$(SUT_SERVE): $(SUT_SERVE_SRC) sut/eeb_sut_serve.c sut/eeb_sut.h sut/eeb_sut_exec.h sut/eeb_sut_serve.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -I. $(SUT_SERVE_SRC) sut/eeb_sut_serve.c -ldl -o $@
all: $(SUT_SERVE)
$(BUILD)/sut/lib%.so: sut/examples/%.c sut/eeb_sut.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -fPIC -I. $< -o $@
$(BUILD)/tests/sut/libbad_%.so: tests/sut/bad_sut.c sut/eeb_sut.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -fPIC -I. -DBAD_$$(echo $* | tr a-z A-Z) $< -o $@
$(BUILD)/tests/sut/libold_%.so: tests/sut/old_sut.c sut/examples/nearest_mean.c sut/eeb_sut.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -fPIC -I. -DOLD_$$(echo $* | tr a-z A-Z) $< -o $@
$(BUILD)/tests/sut/libcheck_%.so: tests/sut/bad_check_sut.c sut/eeb_sut.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -fPIC -I. -DCHECK_$$(echo $* | tr a-z A-Z) $< -o $@
# eeb's own backends answering shifted classes: the accuracy audit's
# catch (tests/sut/shifted_sut.c), out of libeeb as SUT_OWN is.
SUT_SHIFTED := $(BUILD)/tests/sut/libshifted.so
$(SUT_SHIFTED): tests/sut/shifted_sut.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) $(LDFLAGS) -shared $< $(LIB) $(LDLIBS) -o $@

# Tests find their fixtures and the binary under test relative to the top.
$(call obj,$(TEST_SRC) $(BENCH_SRC) $(wildcard tests/fuzz/*.c)): CPPFLAGS += -DEEB_TEST_DATA='"tests/data"' \
    -DEEB_BIN='"$(EEB)"'

$(call obj,$(TEST_SRC)): CPPFLAGS += -DEEB_SUT_EXAMPLE='"$(BUILD)/sut/libnearest_mean.so"' \
    -DEEB_SUT_OWN='"$(SUT_OWN)"' \
    -DEEB_SUT_BAD='"$(BUILD)/tests/sut/libbad_"' -DEEB_SUT_OLD='"$(BUILD)/tests/sut/libold_"' \
    -DEEB_SUT_SERVE='"$(SUT_SERVE)"' \
    -DEEB_SUT_CHECK='"$(BUILD)/tests/sut/libcheck_"' -DEEB_SUT_SHIFTED='"$(SUT_SHIFTED)"'

# Order-only: the tests dlopen the libraries, they do not link them.
$(TESTS): | $(SUT_EXAMPLES) $(SUT_BAD) $(SUT_OLD) $(SUT_CHECK) $(SUT_OWN) $(SUT_SERVE) $(SUT_SHIFTED)
$(TESTS): $(call obj,$(TEST_SRC)) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -lcriterion -lpng -o $@

# bench_sut_exec runs the example SUT in process and hosted by eeb sut serve.
$(call obj,tests/bench/bench_sut_exec.c): CPPFLAGS += \
    -DEEB_SUT_EXAMPLE='"$(BUILD)/sut/libnearest_mean.so"'
$(BUILD)/bench/bench_sut_exec: | $(SUT_EXAMPLES) $(EEB)


$(BUILD)/bench/%: $(BUILD)/obj/tests/bench/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# A fuzz target twice: on replay.c's main (every compiler, every build) and
# on libFuzzer's (clang's -fsanitize=fuzzer, make fuzz).
$(BUILD)/fuzz-replay/%: $(BUILD)/obj/tests/fuzz/%.o $(call obj,tests/fuzz/fuzz.c tests/fuzz/replay.c) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/fuzzer/%: $(BUILD)/obj/tests/fuzz/%.o $(call obj,tests/fuzz/fuzz.c) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -fsanitize=fuzzer $^ $(LDLIBS) -o $@

# A target's inputs: its seeds, every input that once crashed it (kept as
# a regression test), and the fixtures of its format.
FUZZ_FIXTURES_fuzz_util_report := tests/data/util
FUZZ_FIXTURES_fuzz_rules := scoring/rules
fuzz_inputs = $(wildcard tests/fuzz/seeds/$(1) tests/fuzz/regress/$(1)) $(FUZZ_FIXTURES_$(1))

replay: $(REPLAYS)
	@$(foreach t,$(FUZZ_NAMES),$(BUILD)/fuzz-replay/$(t) $(call fuzz_inputs,$(t)) &&) true

test: $(EEB) $(TESTS) $(REPLAYS)
	$(TESTS) --jobs=2
	@$(MAKE) --no-print-directory replay

# The suite runs on the default compiler (gcc); the sanitizers' build is
# clang's, so the other compiler builds it all warning-free too.  Then the
# same code under memcheck.
check: test fuzz asan valgrind
# CI's whole gate must fit 20 minutes on 2 cores: the fuzzers get 6 s each
# there (make fuzz alone, 30), which also bounds the corpus valgrind replays.
check: FUZZ_SECONDS := 6

clang-build:
	$(MAKE) --no-print-directory BUILD=build/clang CC=clang \
	    build/clang/eeb build/clang/tests/eeb-tests

# Criterion ignores a worker's exit status once its test has reported, so a
# leak found at exit would pass silently: the log is searched for it.  Left
# to the plain suites, to keep make check within CI's 20 minutes: the long
# fine-tuning runs (the finetune suite, the embedded defaults of the three
# tasks: minutes under ASan, the same code as the short runs), the pages
# looked at in headless Chromium (the browser's time, not eeb's: a test
# that looks at one stops there, EEB_TEST_NO_BROWSER), and runs whose code
# a sibling test takes through ASan (a director-mode run at another power;
# a submission cut off and resumed; an official run of a team's library
# without a station; every command's exit code; pre-trainings; the
# report's layout).
ASAN_SKIP := the_embedded_defaults_give_the_same_s_on_any_machine|the_report_renders_its_plot_in_chromium|every_table_sorts_by_any_column_and_marks_it|a_runs_own_log_far_from_the_servers_meter_is_invalid|an_official_run_cut_off_at_scoring_is_finished_by_submit_resume|an_official_run_of_a_teams_library_is_judged_by_the_server|every_command_says_a_verdict_with_the_same_exit_code|pretrain_learns_and_info_describes_it|a_pretrained_model_is_the_same_bytes_whatever_the_cpus_kernel|the_score_table_gives_weights_terms_shares_and_fractions|the_time_axis_fits_a_short_run_and_says_where_tmax_is
ASAN_FILTER := !(finetune)/!($(ASAN_SKIP))
# A C program that dlopens C++ (a SUT server loading XRT) must have the C++
# runtime from its start, or clang's ASan finds no __cxa_throw to intercept
# and stops at XRT's first exception.
ASAN_CXX_RUNTIME := -Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state
asan:
	$(MAKE) --no-print-directory BUILD=build/asan CC=clang \
	    OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    LDFLAGS="-fsanitize=address,undefined $(ASAN_CXX_RUNTIME)" build/asan/eeb build/asan/tests/eeb-tests replay
	@EEB_TEST_NO_BROWSER=1 build/asan/tests/eeb-tests --jobs=2 --filter '$(ASAN_FILTER)' \
	    > build/asan/tests.log 2>&1; \
	rc=$$?; \
	cat build/asan/tests.log; \
	if grep -q 'ERROR: LeakSanitizer' build/asan/tests.log; then echo "asan: leaks reported"; exit 1; fi; \
	exit $$rc

# Memcheck sees what ASan cannot, a read of memory never written, and it
# checks the -O2 build users run.  A process takes 3-4 s just to start
# under it (eeb links 150 shared libraries; Criterion execs a process per
# test), so it gets a chosen part, two at a time: every parser over its
# fuzz inputs (seeds, regressions and, after make fuzz, the corpus found);
# the suites whose code handles buffers (VALGRIND_SUITES); and one whole
# `eeb run` of a prepared embedded default (8 steps; --fair-sched so the
# sampler keeps its rate under valgrind's one thread at a time), then eeb
# check and eeb report on it.  Criterion ignores its workers' exit codes,
# so every process logs to build/valgrind and the logs are read.  A child
# that execs a program valgrind skips (sut_exec's python3) would leave a log
# of the header alone from between its fork and exec: those are not written.
# LD_PRELOAD: tests/valgrind/hwy_timer.c says why.
# An error is found as well without --track-origins, in two thirds of the
# time; to see where an uninitialised value came from, run
# make valgrind VG_ORIGINS=--track-origins=yes.
VG_ORIGINS ?=
VG_SHIM := $(BUILD)/valgrind-shim/libhwy_timer.so
$(VG_SHIM): tests/valgrind/hwy_timer.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -fPIC $< -o $@
VALGRIND := LD_PRELOAD=$(abspath $(VG_SHIM)) valgrind --error-exitcode=99 --fair-sched=yes $(VG_ORIGINS) \
    --child-silent-after-fork=yes \
    --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
    --trace-children=yes --trace-children-skip='/bin/*,/usr/bin/*' \
    --log-file=$(BUILD)/valgrind/%p.log
# (sut_plugin and sut_exec, a team's library loaded by sut/plugin.c and a
# team's program over the exec protocol, are left to make asan, which
# checks their bounds but not reads of unwritten memory: under memcheck
# they took 111 s and 153 s of CPU, more than CI's 20 minutes could spare.)
VALGRIND_SUITES := metrics shard rundb chain stream energy power_rule sources ops gemm sut_builtin
VG_RUN := $(BUILD)/valgrind/run
valgrind: $(EEB) $(TESTS) $(REPLAYS) $(VG_SHIM)
	@rm -rf $(BUILD)/valgrind && mkdir -p $(VG_RUN)
	$(EEB) run --task cls --workdir $(VG_RUN) --prepare-only -q
	@$(MAKE) --no-print-directory -j2 vg-run $(addprefix vg-suite-,$(VALGRIND_SUITES)) \
	    $(addprefix vg-replay-,$(FUZZ_NAMES))
	@bad=$$(grep -L 'ERROR SUMMARY: 0 errors' $(BUILD)/valgrind/*.log); \
	if [ -n "$$bad" ]; then cat $$bad; echo "valgrind: errors in" $$bad; exit 1; fi; \
	echo "valgrind: $$(ls $(BUILD)/valgrind/*.log | wc -l) processes, no errors"

# On the modeled clock the run's verdict is valgrind's speed's no more: it
# must pass.
vg-run:
	$(VALGRIND) $(EEB) run --task cls --workdir $(VG_RUN) --db $(VG_RUN)/run.db --steps 8 --rate 10 -q
	$(VALGRIND) $(EEB) check $(VG_RUN)/run.db
	$(VALGRIND) $(EEB) report $(VG_RUN)/run.db -o $(VG_RUN)/run.html
vg-suite-%:
	$(VALGRIND) $(TESTS) --filter '$*/*'
vg-replay-%:
	$(VALGRIND) $(BUILD)/fuzz-replay/$* $(call fuzz_inputs,$*) $(wildcard build/fuzz/corpus/$*)

define run_fuzzer
mkdir -p build/fuzz/corpus/$(1) build/fuzz/crashes/$(1) && \
{ build/fuzz/fuzzer/$(1) -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix=build/fuzz/crashes/$(1)/ \
      build/fuzz/corpus/$(1) $(call fuzz_inputs,$(1)) > build/fuzz/$(1).log 2>&1 \
  || { tail -60 build/fuzz/$(1).log; echo "fuzz: $(1) crashed: build/fuzz/crashes/$(1)"; false; }; } && \
echo "fuzz: $(1) $(FUZZ_SECONDS) s:" \
     "$$(grep -o 'number_of_executed_units: [0-9]*' build/fuzz/$(1).log | cut -d' ' -f2) runs," \
     "$$(ls build/fuzz/corpus/$(1) | wc -l) inputs in its corpus, $$(grep -o 'cov: [0-9]*' build/fuzz/$(1).log | tail -1)"
endef

# Each target under ASan and UBSan for FUZZ_SECONDS, two at a time (a
# fuzzer takes one core), its corpus kept in
# build/fuzz/corpus; a crash stops make with the input in build/fuzz/crashes
# (fix it, then add the input to tests/fuzz/regress/TARGET).
FUZZ_SECONDS ?= 30
fuzz:
	$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang \
	    OPT="-O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	         -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION" \
	    LDFLAGS="-fsanitize=address,undefined" $(patsubst %,build/fuzz/fuzzer/%,$(FUZZ_NAMES))
	@$(MAKE) --no-print-directory -j2 FUZZ_SECONDS=$(FUZZ_SECONDS) $(addprefix fuzz-run-,$(FUZZ_NAMES))
fuzz-run-%:
	@$(call run_fuzzer,$*)

# The embedded default end to end: synthetic data and a pre-trained base
# model (made once under build/demo), a fine-tune on the emulator under the
# task's T_max and P_max, the test stage and the score, into demo.db and
# demo.html.
demo: $(EEB)
	$(EEB) run --task cls --workdir build/demo --db demo.db --report demo.html

# The real XRT host path on a machine with no board: XRT's noop shim (a
# directory whose lib/ links Debian's core and noop libraries), the
# reference xclbin, and the embedded default through --backend xrt; the
# kernel C does the work the noop device skips.
NOOP := $(BUILD)/xrt-noop
demo-xrt: $(EEB)
	@mkdir -p $(NOOP)/lib
	ln -sf $(XRT_LIBDIR)/libxrt_core.so.2 $(XRT_LIBDIR)/libxrt_noop.so.2 $(NOOP)/lib/
	$(EEB) xclbin build -o $(BUILD)/fx.xclbin \
	    --design device=zcu104,pes=4,macs=16,clock_mhz=250,ddr=1,mult=dsp2
	XILINX_XRT=$(abspath $(NOOP)) XCL_EMULATION_MODE=noop $(EEB) run --task cls \
	    --workdir $(BUILD)/demo --backend xrt --xclbin $(BUILD)/fx.xclbin \
	    --db demo-xrt.db --report demo-xrt.html

bench: $(BENCHES)
	@for b in $(BENCHES); do echo "== $$b"; $$b || exit 1; done

lint:
	sh tests/include_graph.sh
	clang-format --dry-run --Werror $(LIB_SRC) $(CLI_SRC) $(TEST_SRC) $(BENCH_SRC) $(wildcard tests/fuzz/*.c) \
	    $(SUT_EXAMPLE_SRC) tests/sut/bad_sut.c tests/sut/old_sut.c tests/sut/bad_check_sut.c \
	    tests/sut/shifted_sut.c tests/valgrind/hwy_timer.c \
	    $(wildcard */*.h */*/*.h)
	@# The fixed-point code relies on arithmetic right shifts of negative
	@# numbers (fpga/kernel/fx_arith.h says why); cppcheck flags them all.
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	    --suppress=shiftNegativeLHS --suppress=shiftNegative \
	    --std=c11 -I. -D__GNUC__ \
	    -DEEB_RULES_V1_PATH='"scoring/rules/v1.json"' $(LIB_SRC) $(CLI_SRC) $(SUT_EXAMPLE_SRC)

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -z "$$missing" ]; then echo "deps: all $(words $(DEB_PACKAGES)) packages installed"; exit 0; fi; \
	sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	echo "deps: installing" $$missing; \
	$$sudo apt-get update -q && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
