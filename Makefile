# strux — top-level build.  See README.md for the two commands that matter:
#   make run    set up and run the main job
#   make test   set up and pass the tests
#
# Sources are discovered by folder (subfolders too), so adding a file needs no edit here:
#   common/ engine/** grammar/** kernels/*.c rpc/ -> $(BUILD)/libstrux.a
#   tools/strux/*.c                 -> $(BUILD)/strux
#   tools/struxd/*.c                -> $(BUILD)/struxd   (the server)
#   tests/unit/test_*.c             -> $(BUILD)/tests/test_*   (one cmocka binary each)
#   tests/fuzz/fuzz_*.c             -> build-fuzz/fuzz_*         (clang libFuzzer)
#   kernels/*.cu engine/cuda/*.cu   -> $(BUILD)/libstrux_cuda.a  (when nvcc is found; CUDA=0 skips)
#   make cuda                       -> also $(BUILD)/cuda/strux, $(BUILD)/cuda/struxd (--device cuda)
#   make emu                        -> build-emu/strux, build-emu/struxd: the CUDA backend on the CPU
#                                      emulation of tests/gpu/emu (slow; for tests without a GPU)
#   make test-emu                   -> CI's device check on that emulation (no GPU needed)
# The layout's dependency rules are checked by tools/check_layout.py (make check-layout).

BUILD    ?= build
SAN      ?= 0
SHARED   ?= $(abspath ../shared)
NVCC     ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA     ?= $(if $(NVCC),1,0)
CC       ?= cc

CSTD     := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wno-format-truncation
OPT      ?= -O2
CFLAGS   := $(CSTD) $(OPT) -g $(WARN) -MMD -MP -I. -pthread -fno-strict-aliasing
LDLIBS   := -lnng -ljansson -lpcre2-8 -lutf8proc -lm -lpthread

ifeq ($(SAN),1)
  CFLAGS  += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
  LDFLAGS += -fsanitize=address,undefined
endif

MODULES   ?= common engine grammar kernels rpc
# every .c below a module folder, in a stable order
LIB_SRC   := $(sort $(shell find $(MODULES) -name '*.c'))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB       := $(BUILD)/libstrux.a

TOOL_SRC  := $(wildcard tools/strux/*.c)
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
# the server's main (tools/struxd/*.c) -> $(BUILD)/struxd
D_SRC     := $(wildcard tools/struxd/*.c)
# the option tables are strux's (tools/strux/cli_opts.c), shared so both binaries
# parse, refuse and document options the same way
D_OBJ     := $(D_SRC:%.c=$(BUILD)/obj/%.o) $(if $(D_SRC),$(BUILD)/obj/tools/strux/cli_opts.o)

TEST_SRC  := $(wildcard tests/unit/test_*.c)
CLI_TESTS := $(wildcard tests/cli/test_*.sh)
TOOLS     := $(BUILD)/strux $(if $(D_SRC),$(BUILD)/struxd)
TEST_BIN  := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_HELP := $(wildcard tests/unit/helpers/*.c)
TEST_HOBJ := $(TEST_HELP:%.c=$(BUILD)/obj/%.o)

CU_SRC    := $(sort $(shell find kernels engine/cuda -name '*.cu'))
CU_OBJ    := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
CU_LIB    := $(BUILD)/libstrux_cuda.a
GPU_TEST_SRC := $(wildcard tests/gpu/*.c)
NVFLAGS   := -O2 -std=c++17 -I. -Werror all-warnings \
             -Xcompiler -Wall,-Wextra,-Werror,-Wno-unused-parameter \
             -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))

ALL := $(LIB) $(BUILD)/strux $(if $(D_SRC),$(BUILD)/struxd)
ifeq ($(CUDA),1)
  ALL += $(CU_LIB) $(BUILD)/strux_gpu_tests
endif

.PHONY: all deps test test-run check-layout asan fuzz fuzz-smoke run bench fixtures clean cuda emu test-emu help
# keep objects made through pattern chains (tests, fuzz) between runs
.SECONDARY:
all: $(ALL)

help:
	@sed -n '1,16p' Makefile | sed 's/^# \{0,1\}//'
	@echo "targets: all deps test check-layout asan fuzz fuzz-smoke run bench fixtures cuda emu test-emu clean"

deps:
	@bash tools/install_deps.sh
	@bash tools/install_pyenv.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/strux: $(TOOL_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(TOOL_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/struxd: $(D_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(D_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_HOBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_HOBJ) $(LIB) $(LDLIBS) -lcmocka

# `make test` sets up first (packages), then builds and runs every test.
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory test-run

# tests run TEST_JOBS at a time (default: one per core; tests/run_tests.sh)
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test-run: $(TEST_BIN) $(TOOLS) check-layout
	@STRUX_TEST_JOBS=$(TEST_JOBS) STRUX_SHARED=$(SHARED) STRUX_BUILD=$(abspath $(BUILD)) bash tests/run_tests.sh $(TEST_BIN) $(if $(TOOLS),$(CLI_TESTS))

# which folder may include which (README "Layout"); fails on any violation
check-layout:
	@python3 tools/check_layout.py

# under ASan the server end-to-end test sends a spread subset of its requests,
# and fuzzgen, the replica and Python-client tests run light.  CLI tests that
# check numbers or packaging rather than parse input are left to the plain
# stage: their C paths run under the sanitizers in the unit tests (perplexity:
# test_model_ref, test_engine; quantized weights: test_model_quant; speculation:
# test_spec; beams: test_beam and test_beam_server.sh), and the rest is Python
# or shell (layout, deploy, the runner) -- together ~6 minutes of CI under ASan.
ASAN_SKIP_CLI := $(addprefix tests/cli/,test_perplexity.sh test_cpu_paths.sh test_quant_cli.sh \
                 test_speculate_cli.sh test_beam_cli.sh test_deploy.sh test_layout.sh \
                 test_run_tests.sh test_spark.sh)
asan:
	STRUX_E2E_REQUESTS=72 STRUX_FUZZGEN_DOCS=8 STRUX_LIGHT=1 $(MAKE) SAN=1 BUILD=build-asan CUDA=0 \
	  CLI_TESTS="$(filter-out $(ASAN_SKIP_CLI),$(CLI_TESTS))" test

# --- CUDA ------------------------------------------------------------------
$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -MMD -MP -c $< -o $@

$(CU_LIB): $(CU_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/strux_gpu_tests: $(GPU_TEST_SRC) $(CU_LIB) $(LIB)
	$(CC) $(CSTD) $(OPT) $(WARN) -I. -I$(CUDA_HOME)/include -o $@ $(GPU_TEST_SRC) $(CU_LIB) $(LIB) \
	  -L$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++ $(LDLIBS)

CUDA_LINK := -L$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++
$(BUILD)/cuda/strux: $(TOOL_OBJ) $(CU_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(TOOL_OBJ) -Wl,-u,sx_cuda_backend_open $(CU_LIB) $(LIB) $(CUDA_LINK) $(LDLIBS)

$(BUILD)/cuda/struxd: $(D_OBJ) $(CU_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(D_OBJ) -Wl,-u,sx_cuda_backend_open $(CU_LIB) $(LIB) $(CUDA_LINK) $(LDLIBS)

cuda:
	$(MAKE) CUDA=1 $(CU_LIB) $(BUILD)/strux_gpu_tests $(BUILD)/cuda/strux $(BUILD)/cuda/struxd

# --- the CUDA backend on the CPU emulation (tests/gpu/emu) -----------------------
# make emu: the same .cu sources compiled by g++ against the emulated CUDA
# runtime and cuBLAS, linked with $(BUILD)'s objects into $(EMU_DIR)/strux and
# $(EMU_DIR)/struxd.  -u pulls the backend in by name: engine/backend.c only
# refers to it weakly, so a build without it answers --device cuda with
# "built without CUDA".
EMU_DIR   ?= $(BUILD)-emu
EMU_CXXFLAGS := -std=c++17 -O2 -g -DSX_CUDA_EMU -Itests/gpu/emu/include -I. -Wall -Wextra -Werror \
                -Wno-unused-parameter -Wno-unknown-pragmas -Wno-sign-compare -fno-strict-aliasing \
                -MMD -MP
EMU_OBJ   := $(CU_SRC:%.cu=$(EMU_DIR)/cu/%.o) $(EMU_DIR)/cu/cuda_emu.o
EMU_LIB   := $(EMU_DIR)/libstrux_cuda_emu.a
$(EMU_DIR)/cu/%.o: %.cu
	@mkdir -p $(dir $@)
	g++ $(EMU_CXXFLAGS) -x c++ -c $< -o $@
$(EMU_DIR)/cu/cuda_emu.o: tests/gpu/emu/cuda_emu.cpp
	@mkdir -p $(dir $@)
	g++ $(EMU_CXXFLAGS) -c $< -o $@
$(EMU_LIB): $(EMU_OBJ)
	rm -f $@ && ar rcs $@ $^
$(EMU_DIR)/strux: $(TOOL_OBJ) $(EMU_LIB) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(TOOL_OBJ) -Wl,-u,sx_cuda_backend_open $(EMU_LIB) $(LIB) $(LDLIBS) -lstdc++
$(EMU_DIR)/struxd: $(D_OBJ) $(EMU_LIB) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(D_OBJ) -Wl,-u,sx_cuda_backend_open $(EMU_LIB) $(LIB) $(LDLIBS) -lstdc++
emu: $(EMU_DIR)/strux $(EMU_DIR)/struxd

# The GPU test driver (tests/gpu/*.c) on the emulator, and CI's device check:
# make test-emu builds the emulated product and runs, with no GPU,
#   - strux_gpu_tests mask refengine: the mask kernel against its CPU
#     reference, the engine against the composed CPU references (the
#     arithmetic's bound on greedy ties, tests/gpu/gpu_ref.c), and the
#     engine's clear refusal without a device; sampled: temperature-1 draws
#     of the GPU engine (host and device samplers) against the CPU
#     backend's, seed for seed, differences only within the logits' bound;
#   - tests/gpu/emu/device_check.py: build-emu/struxd --device cuda beside
#     the CPU server on the tiny random model (greedy ids, temperature 1 via
#     n = 2, labels, beams, streaming, the masked steps in /metrics;
#     DEVICE_CHECK_FULL=1: greedy over every schema in schemas/);
#   - tests/cli/test_device.sh with STRUX_EMU: strux generate / perplexity
#     --device cuda against --device cpu.
# CPU seconds measured on a shared 2-core box: the emulated objects ~21,
# the whole of test-emu ~75 (sampled ~12, device_check.py's emulated server
# ~16; the emulator's fibers switch without swapcontext's signal-mask system
# calls, which had made it ~5x slower).  The full kernel and engine groups
# stay in tests/gpu/emu/run.sh (the kernels group ~20 s).
EMU_TEST_OBJ := $(GPU_TEST_SRC:tests/gpu/%.c=$(EMU_DIR)/gt/%.o)
$(EMU_DIR)/gt/%.o: tests/gpu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) -O2 -g -Itests/gpu/emu/include -I. $(WARN) -fno-strict-aliasing -MMD -MP -c $< -o $@
$(EMU_DIR)/strux_gpu_tests: $(EMU_TEST_OBJ) $(EMU_LIB) $(LIB)
	g++ -o $@ $(EMU_TEST_OBJ) $(EMU_LIB) $(LIB) $(LDLIBS)
EMU_PY ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
test-emu: $(EMU_DIR)/strux $(EMU_DIR)/struxd $(EMU_DIR)/strux_gpu_tests $(TOOLS)
	$(EMU_DIR)/strux_gpu_tests --dir $(EMU_DIR)/models mask refengine sampled
	@if SX_EMU_NO_DEVICE=1 $(EMU_DIR)/strux_gpu_tests --require-gpu mask >/dev/null 2>&1; then \
	  echo "FAIL: --require-gpu passed without a device"; exit 1; fi
	SX_EMU_NO_DEVICE=1 $(EMU_DIR)/strux_gpu_tests nodevice
	$(EMU_PY) tests/gpu/emu/device_check.py $(BUILD)/struxd $(EMU_DIR)/struxd $(BUILD)/strux $(CURDIR)
	STRUX_SHARED=$(SHARED) STRUX_BUILD=$(abspath $(BUILD)) STRUX_EMU=$(abspath $(EMU_DIR)) \
	  bash tests/cli/test_device.sh

# --- fuzzing (clang libFuzzer) -------------------------------------------------
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=build-fuzz/obj/%.o)
FUZZ_CFLAGS := $(CSTD) -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -I. -pthread \
               -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) $(LDLIBS)
fuzz: $(FUZZ_BIN)
fuzz-smoke: $(FUZZ_BIN)
	@STRUX_SHARED=$(SHARED) bash tests/fuzz/smoke.sh $(FUZZ_BIN)

# --- jobs ----------------------------------------------------------------------
run: deps all
	@STRUX_SHARED=$(SHARED) bash tools/run_main.sh

$(BUILD)/bench_%: bench/bench_%.c $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

bench: all $(BUILD)/bench_tokenizer $(BUILD)/bench_decode $(BUILD)/bench_sampler $(BUILD)/bench_kernels $(BUILD)/bench_spec $(BUILD)/bench_mask_ref
	@STRUX_SHARED=$(SHARED) STRUX_BUILD=$(BUILD) bash bench/run.sh

fixtures:
	bash tests/fixtures/make_fixtures.sh

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD)/obj $(EMU_DIR)/cu $(EMU_DIR)/gt build-fuzz/obj -name '*.d' 2>/dev/null)
