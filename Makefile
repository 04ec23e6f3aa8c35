# cutrace build. `make` builds the shim and the CLI; `make test` builds and runs every test on
# the fake CUDA driver; `make demo` records a bundled sample and prints its summary.
# `make sanitize` builds and runs the whole suite again under ThreadSanitizer (build-tsan/) and
# AddressSanitizer+UBSan (build-asan/); `make fuzz` builds the libFuzzer targets (build-fuzz/,
# clang) and runs each over its corpus (test/fuzz/run.sh).
CUDA_HOME ?= /usr/local/cuda
PREFIX    ?= /usr/local
BUILD     ?= build
CXX       ?= g++
CXXFLAGS  ?= -O2 -g
# The reader library and the tools (which stream whole traces) build with -O3 in the default
# build: `cutrace summary` is 4% faster than at -O2 (bench/summary_speed.sh). The sanitizer and
# fuzz builds set TOOLS_OPT empty and keep their own -O1.
TOOLS_OPT ?= -O3
LDFLAGS   ?=
WARN      := -Wall -Wextra -Wno-unused-parameter
COMMON    := -std=c++17 -fPIC $(WARN) -I. -I$(CUDA_HOME)/include -MMD -MP
LIBDIR    := /usr/lib/x86_64-linux-gnu
LZ4_A     := $(firstword $(wildcard $(LIBDIR)/liblz4.a /usr/lib/liblz4.a))
# The tools read ELF symbol tables with elfutils' libelf and DWARF source lines with its libdw
# (static, with zlib; the shim links neither).
ELF_A     := $(LIBDIR)/libdw.a $(LIBDIR)/libelf.a $(LIBDIR)/libz.a

# Layers, each using only those above it: trace/ (the file format: every tool and the collector),
# runtime/ (what the shim's wrappers and the collector share: config, driver slots, ticks, the
# per-thread record chunks), collector/ (drains the chunks into a trace), shim/ and nvtx_bridge/
# (the entry points), tools/ (the CLI).
FORMAT_SRC := $(wildcard trace/*.cpp)
RUNTIME_SRC := $(wildcard runtime/*.cpp)
COLLECTOR_SRC := $(wildcard collector/*.cpp)
SHIM_SRC   := $(RUNTIME_SRC) $(COLLECTOR_SRC) $(wildcard shim/*.cpp) $(wildcard nvtx_bridge/*.cpp)
TOOLS_SRC  := $(wildcard tools/*/*.cpp)
FAKE_SRC   := $(wildcard test/fake_cuda/*.cpp)
FAKE_CUPTI_SRC := $(wildcard test/fake_cupti/*.cpp)
FAKE_NVML_SRC := $(wildcard test/fake_nvml/*.cpp)
UNIT_SRC   := $(wildcard test/unit/*.cpp)
E2E_SRC    := $(wildcard test/e2e/*.cpp)
FUZZ_SRC   := $(wildcard test/fuzz/*.cpp)

obj = $(patsubst %.cpp,$(BUILD)/obj/%.o,$(1))

# The report page (web/) is embedded into the CLI at build time; its chart library comes from npm
# (web/package-lock.json), fetched with `npm ci` when missing. docs/REPORT.md.
CHART_JS   := web/node_modules/chart.js/dist/chart.umd.js
WEB_SRC    := $(wildcard web/*.html web/*.js web/*.css)
WEB_FILES  := $(foreach f,$(WEB_SRC),$(notdir $(f))=$(f)) chart.umd.js=$(CHART_JS)
WEB_GEN    := $(BUILD)/gen/web_assets.cpp

SHIM_SO  := $(BUILD)/lib/libcutrace.so
FORMAT_A := $(BUILD)/lib/libcutrace_format.a
COLLECTOR_A := $(BUILD)/lib/libcutrace_collector.a
TOOLS_A  := $(BUILD)/lib/libcutrace_tools.a
CLI_BIN  := $(BUILD)/bin/cutrace
FAKE_SO  := $(BUILD)/test/fake_cuda/libcuda.so.1
FAKE_CUPTI_SO := $(BUILD)/test/fake_cupti/libcupti.so
FAKE_NVML_SO := $(BUILD)/test/fake_nvml/libnvidia-ml.so.1
UNIT_BIN := $(BUILD)/test/unit_tests
DISK_FULL_SO := $(BUILD)/test/libdisk_full.so
NVTX_ORACLE_SO := $(BUILD)/test/libnvtx_oracle.so
CLOCK_SHIFT_SO := $(BUILD)/test/libclock_shift.so
E2E_BINS := $(patsubst test/e2e/%.cpp,$(BUILD)/test/e2e/%,$(E2E_SRC))
REPORT_GEN := $(BUILD)/test/report_trace_gen
CRAFT_TRACE := $(BUILD)/test/craft_trace
FUZZ_BINS := $(patsubst test/fuzz/%.cpp,$(BUILD)/fuzz/%,$(FUZZ_SRC))

.PHONY: all test test-bins demo install clean lint format sanitize sanitize-tsan sanitize-asan fuzz fuzz-bins
.SECONDARY:
all: $(SHIM_SO) $(CLI_BIN)

$(BUILD)/obj/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(OPT) $(COMMON) $(EXTRA_$(firstword $(subst /, ,$<))) -c $< -o $@
$(call obj,$(FORMAT_SRC) $(TOOLS_SRC)): OPT := $(TOOLS_OPT)

# The shim hides every symbol but the CUDA/NVTX entry points it exports (see shim/exports.map).
EXTRA_shim        := -fvisibility=hidden
EXTRA_collector   := -fvisibility=hidden
EXTRA_runtime     := -fvisibility=hidden
EXTRA_trace       := -fvisibility=hidden
EXTRA_nvtx_bridge := -fvisibility=hidden
# cpp-httplib (`cutrace serve`): Debian builds it as a shared library; its header must be compiled
# with the library's own feature macros or the classes' layouts differ.
HTTPLIB_CFLAGS := $(shell pkg-config --cflags cpp-httplib 2>/dev/null || echo -DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_ZLIB_SUPPORT -DCPPHTTPLIB_BROTLI_SUPPORT)
EXTRA_tools       := $(HTTPLIB_CFLAGS)

$(FORMAT_A): $(call obj,$(FORMAT_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The collector and the runtime it reads, as a library: the shim links the same objects, the unit
# tests link it to test the collector's parts (op pairing, ranges, stacks, the chunk pool).
$(COLLECTOR_A): $(call obj,$(COLLECTOR_SRC) $(RUNTIME_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Every tools source but main.cpp (and the embedded web assets): the CLI, the unit tests and the
# fuzz targets link the same objects.
$(TOOLS_A): $(call obj,$(filter-out tools/cmd/main.cpp,$(TOOLS_SRC)) $(WEB_GEN))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(SHIM_SO): $(call obj,$(SHIM_SRC)) $(FORMAT_A) shim/exports.map
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -shared -o $@ $(call obj,$(SHIM_SRC)) $(FORMAT_A) $(LZ4_A) \
	  -Wl,--version-script=shim/exports.map -Wl,--exclude-libs,ALL -Wl,-z,nodelete \
	  -static-libstdc++ -static-libgcc -ldl -lpthread

$(CHART_JS): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	touch $@

$(WEB_GEN): tools/dev/embed_web.py $(WEB_SRC) $(CHART_JS)
	@mkdir -p $(dir $@)
	python3 tools/dev/embed_web.py $@ $(WEB_FILES)

# The CLI links the shared libcpp-httplib (Debian ships no static one), which uses the shared
# libstdc++: the CLI does too, so that one C++ runtime serves both (the shim stays static).
TOOLS_LIBS := $(LZ4_A) $(LIBDIR)/libsqlite3.a $(ELF_A) -lcpp-httplib -lpthread -ldl -lm
$(CLI_BIN): $(call obj,tools/cmd/main.cpp) $(TOOLS_A) $(FORMAT_A)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -o $@ $^ $(TOOLS_LIBS)

$(FAKE_SO): $(call obj,$(FAKE_SRC))
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -shared -o $@ $^ -Wl,-soname,libcuda.so.1 -lpthread
	ln -sf libcuda.so.1 $(dir $@)libcuda.so

# The fake CUPTI (test/fake_cupti/fake_cupti.h): CUTRACE_CUPTI points cutrace at it in the e2e
# tests; it finds the fake driver at run time (dlsym), linking neither it nor the real CUPTI.
# The fake NVML (test/fake_nvml): on LD_LIBRARY_PATH only in the e2e tests of the GPU sampler.
$(FAKE_NVML_SO): $(call obj,$(FAKE_NVML_SRC))
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -shared -o $@ $^ -Wl,-soname,libnvidia-ml.so.1

$(FAKE_CUPTI_SO): $(call obj,$(FAKE_CUPTI_SRC)) test/fake_cupti/exports.map
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -shared -o $@ $(call obj,$(FAKE_CUPTI_SRC)) -Wl,--version-script=test/fake_cupti/exports.map \
	  -Wl,-soname,libcupti.so -ldl -lpthread

# The unit tests link the tools library and the collector library.
$(UNIT_BIN): $(call obj,$(UNIT_SRC)) $(TOOLS_A) $(COLLECTOR_A) $(FORMAT_A)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -o $@ $^ $(TOOLS_LIBS)

$(BUILD)/test/e2e/%: $(BUILD)/obj/test/e2e/%.o $(FAKE_SO)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -o $@ $< -L$(BUILD)/test/fake_cuda -lcuda -ldl -lpthread -Wl,-rpath-link,$(BUILD)/test/fake_cuda

# hot_path counts the allocations of every library in the process: its malloc must be exported.
$(BUILD)/test/e2e/hot_path: LDFLAGS += -rdynamic
# The hang report names hang_app's launch site through dladdr: its symbols must be exported.
$(BUILD)/test/e2e/hang_app: override LDFLAGS += -rdynamic

$(REPORT_GEN): $(BUILD)/obj/test/report/trace_gen.o $(FORMAT_A)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -o $@ $^ $(LZ4_A)

# Valid traces with hostile contents for the hardening tests (test/craft/craft_trace.cpp).
$(CRAFT_TRACE): $(BUILD)/obj/test/craft/craft_trace.o $(FORMAT_A)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -o $@ $^ $(LZ4_A)


# Test interposer: a disk that fills up after N bytes of trace (test/fault_io/disk_full.cpp).
$(DISK_FULL_SO): $(BUILD)/obj/test/fault_io/disk_full.o
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -shared -o $@ $< -ldl

# The NVTX oracle: an injection that logs what NVTX hands a tool (test/nvtx_oracle/oracle.cpp).
$(NVTX_ORACLE_SO): $(BUILD)/obj/test/nvtx_oracle/oracle.o
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -shared -o $@ $< -lpthread

# Test interposer: a host whose wall clock is off (test/fault_io/clock_shift.cpp).
$(CLOCK_SHIFT_SO): $(BUILD)/obj/test/fault_io/clock_shift.o
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -shared -o $@ $< -ldl

# The launch loop that bench/gpu/launch_ab.py runs on a GPU machine: linked against the fake
# driver, whose soname is the real driver's (libcuda.so.1), so the same binary runs there. Built by
# `make test` so that it keeps compiling.
LAUNCH_AB := $(BUILD)/bench/launch_ab
$(LAUNCH_AB): $(call obj,bench/gpu/launch_ab.cpp) $(FAKE_SO)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS) -o $@ $< -L$(dir $(FAKE_SO)) -lcuda -ldl

# test-bins: everything the suites need, built without running them (then run one e2e test with
# `BUILD=build bash test/e2e/run.sh NAME`).
TEST_BINS = all $(FAKE_SO) $(FAKE_CUPTI_SO) $(FAKE_NVML_SO) $(UNIT_BIN) $(E2E_BINS) $(REPORT_GEN) $(CRAFT_TRACE) $(DISK_FULL_SO) \
            $(CLOCK_SHIFT_SO) $(NVTX_ORACLE_SO) $(LAUNCH_AB)
test-bins: $(TEST_BINS)

test: $(TEST_BINS)
	$(UNIT_BIN)
	BUILD=$(BUILD) bash test/e2e/run.sh
	BUILD=$(BUILD) bash test/browser/run.sh report
	BUILD=$(BUILD) bash test/browser/run.sh serve
	BUILD=$(BUILD) bash test/browser/run.sh diff

# ---- lint: C++ layout (.clang-format; clang-format 14, as Debian 12 ships it) and the web
# scripts (web/eslint.config.mjs; eslint from web/package-lock.json). Fix with `make format`.
LINT_CXX = $(shell find shim runtime collector trace nvtx_bridge tools test bench \
             \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.c' \) -print | sort)
lint: $(CHART_JS)
	@clang-format --dry-run --Werror $(LINT_CXX) && echo "lint: $(words $(LINT_CXX)) C++ files as .clang-format lays them out"
	@cd web && npx eslint . && echo "lint: web/ scripts pass eslint"
format:
	clang-format -i $(LINT_CXX)

# ---- sanitizers: the same build and the same tests, under TSan or ASan+UBSan (gcc) -----------
# test/sanitize/run.sh sets the runtime options, preloads the runtime ahead of the shim in the
# processes the e2e tests start, and fails if any sanitizer report was written.
SAN_FLAGS_tsan := -O1 -g -fsanitize=thread
SAN_FLAGS_asan := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
sanitize:  # one after the other: both at once would double the load on the timing of the tests
	$(MAKE) sanitize-asan
	$(MAKE) sanitize-tsan
sanitize-tsan sanitize-asan: sanitize-%:
	$(MAKE) BUILD=build-$* CXXFLAGS="$(SAN_FLAGS_$*)" TOOLS_OPT= LDFLAGS="$(SAN_FLAGS_$*)" all $(FAKE_SO:$(BUILD)/%=build-$*/%) $(FAKE_CUPTI_SO:$(BUILD)/%=build-$*/%) $(FAKE_NVML_SO:$(BUILD)/%=build-$*/%) \
	  $(UNIT_BIN:$(BUILD)/%=build-$*/%) $(E2E_BINS:$(BUILD)/%=build-$*/%) $(DISK_FULL_SO:$(BUILD)/%=build-$*/%) \
	  $(NVTX_ORACLE_SO:$(BUILD)/%=build-$*/%) $(CRAFT_TRACE:$(BUILD)/%=build-$*/%) \
	  $(CLOCK_SHIFT_SO:$(BUILD)/%=build-$*/%)
	bash test/sanitize/run.sh $* build-$*

# ---- libFuzzer targets (clang): test/fuzz/*.cpp -> build-fuzz/fuzz/* ---------------------------
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION: the reader skips block checksums (trace/reader.cpp).
FUZZ_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
              -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
fuzz:
	$(MAKE) BUILD=build-fuzz CXX=clang++ CXXFLAGS="$(FUZZ_FLAGS) -fsanitize=fuzzer-no-link" TOOLS_OPT= fuzz-bins
	BUILD=build-fuzz bash test/fuzz/run.sh
fuzz-bins: $(FUZZ_BINS)
$(BUILD)/fuzz/%: $(BUILD)/obj/test/fuzz/%.o $(TOOLS_A) $(FORMAT_A)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -fsanitize=fuzzer -o $@ $^ $(TOOLS_LIBS)

demo: all $(FAKE_SO) $(BUILD)/test/e2e/sample_app
	BUILD=$(BUILD) bash tools/demo.sh

install: all
	install -D -m 0755 $(CLI_BIN) $(DESTDIR)$(PREFIX)/bin/cutrace
	install -D -m 0755 $(SHIM_SO) $(DESTDIR)$(PREFIX)/lib/libcutrace.so

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
