# record/record.mk - trace-record (launcher + injected CUPTI agent) and its GPU-less tests.
# Included by the main Makefile; builds only when the CUDA toolkit's CUPTI headers exist.
#
#   $(BUILD)/bin/trace-record             launcher (may use sanitizers: it is not injected)
#   $(BUILD)/lib/libtracekit-agent.so     agent: links only libcupti, libc, libpthread, libdl;
#                                         built without sanitizers (it is dlopen'ed into
#                                         programs that do not carry the sanitizer runtime)
#   $(BUILD)/rec/libcupti.so.13           fake libcupti for the tests (same soname/version node)
#   $(BUILD)/rec/fake_app                 a fake CUDA program/driver that loads the agent
#   $(BUILD)/rec/nvtx_only                a program using NVTX only (real libcupti, no GPU)
#   $(BUILD)/rec/fakecuda/libcuda.so.1    a driver that only tells its version

CUDA_HOME ?= /usr/local/cuda
# Defining targets here must not change the main Makefile's default goal.
REC_SAVED_GOAL := $(.DEFAULT_GOAL)

ifneq ($(wildcard $(CUDA_HOME)/include/cupti.h),)

REC_CUDA_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so $(CUDA_HOME)/lib/libcupti.so))
REC_CUDA_LIBDIR := $(dir $(REC_CUDA_LIB))
REC_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(if $(DEBUG),-Werror) $(CFLAGS) -iquote . \
              -I$(CUDA_HOME)/include -MMD -MP
REC_TFLAGS := $(filter-out -MMD -MP,$(REC_CFLAGS))
REC_AGENT := $(BUILD)/lib/libtracekit-agent.so
REC_AGENT_OBJ := $(BUILD)/obj/rec-agent/agent.o $(BUILD)/obj/rec-agent/encode.o \
                 $(BUILD)/obj/rec-agent/nvtx.o
REC_FAKE := $(BUILD)/rec/libcupti.so.13
REC_APP := $(BUILD)/rec/fake_app
REC_NVTX_APP := $(BUILD)/rec/nvtx_only
REC_FAKE_CUDA := $(BUILD)/rec/fakecuda/libcuda.so.1

RECORD_TARGETS := $(BUILD)/bin/trace-record $(REC_AGENT) $(REC_FAKE) $(REC_APP) $(REC_NVTX_APP) \
                  $(REC_FAKE_CUDA)
RECORD_TEST := BUILD=$(BUILD) record/tests/check-agent.sh

$(BUILD)/obj/rec-agent/%.o: record/agent/%.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(REC_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(REC_AGENT): $(REC_AGENT_OBJ)
	$(call say,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -shared -o $@ $^ -Wl,-z,nodelete -Wl,--no-undefined -Wl,--exclude-libs,ALL \
	    -L$(REC_CUDA_LIBDIR) -Wl,-rpath,$(REC_CUDA_LIBDIR) -lcupti -lpthread -ldl

$(BUILD)/bin/trace-record: $(BUILD)/obj/record/launcher.o
	$(call say,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^

$(REC_FAKE): record/tests/fakecupti/fake_cupti.c record/tests/fakecupti/fake_cupti.h record/tests/fakecupti/fake_cupti.map
	$(call say,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(REC_TFLAGS) -fPIC -shared -o $@ $< -Wl,-soname,libcupti.so.13 \
	    -Wl,--version-script=record/tests/fakecupti/fake_cupti.map -lpthread -ldl

$(REC_APP): record/tests/fake_app.c record/tests/fakecupti/fake_cupti.h $(REC_FAKE)
	$(call say,LD,$@)
	$(Q)$(CC) $(REC_TFLAGS) -o $@ $< $(REC_FAKE) -Wl,-rpath,'$$ORIGIN' -lpthread -ldl

# a driver library that only tells its version, for the recorder's diagnosis
$(REC_FAKE_CUDA): record/tests/fakecupti/fake_cuda.c
	$(call say,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(REC_TFLAGS) -fPIC -shared -o $@ $< -Wl,-soname,libcuda.so.1

# NVTX only, linked to nothing of CUDA's: run under the real libcupti
$(REC_NVTX_APP): record/tests/nvtx_only.c
	$(call say,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(REC_TFLAGS) -o $@ $< -ldl

else
$(info note: CUDA toolkit not found at $(CUDA_HOME) (no include/cupti.h): trace-record not built)
endif

.DEFAULT_GOAL := $(REC_SAVED_GOAL)
