# numdyn developer entry points. See README.md.
PYTHON ?= python3
BUILD ?= build/dev
EXT_SUFFIX := $(shell $(PYTHON) -c "import sysconfig;print(sysconfig.get_config_var('EXT_SUFFIX'))")
NP_INC := $(shell $(PYTHON) -c "import numpy;print(numpy.get_include())")
PY_INC := $(shell $(PYTHON) -c "import sysconfig;print(sysconfig.get_paths()['include'])")
SRCS := $(wildcard src/*.c numpy_shim/*.c guards/*.c)
OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(SRCS))
HDRS := $(wildcard src/*.h src/*.def numpy_shim/*.h guards/*.h)
DEV_CFLAGS ?= -std=c11 -O2 -g -fPIC -Wall -Wextra -Wno-unused-parameter \
  -Wno-missing-field-initializers -fvisibility=hidden \
  -DNPY_NO_DEPRECATED_API=NPY_2_0_API_VERSION
ifeq ($(WERROR),1)
DEV_CFLAGS += -Werror
endif

.PHONY: dev
# Fast incremental build into $(BUILD) (one per developer/helper):
#   make dev BUILD=/tmp/nd-me && PYTHONPATH=/tmp/nd-me python -c 'import numdyn'
dev: $(BUILD)/numdyn/_C$(EXT_SUFFIX)
	@mkdir -p $(BUILD)/numdyn
	@for f in src/numdyn/*.py; do ln -sf $(CURDIR)/$$f $(BUILD)/numdyn/; done
	@ln -sfn $(CURDIR)/kernels $(BUILD)/numdyn/kernels

$(BUILD)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(DEV_CFLAGS) -I$(NP_INC) -I$(PY_INC) -Isrc -Inumpy_shim -Iguards -Ikernels -c $< -o $@

$(BUILD)/numdyn/_C$(EXT_SUFFIX): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(OBJS) -ldl
