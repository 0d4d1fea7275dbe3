# loom — quick-start targets. `make demo` and `make test` are all a user needs
# on a fresh Debian machine (as root: missing packages are installed).
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
CMAKE_FLAGS ?=

.PHONY: all deps build asan demo test test-release test-asan install deb clean

all: build

deps:
	@bash .ci/install-deps

build: deps
	cmake -S . -B $(BUILD) -DLOOM_WERROR=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# The sanitizer build's tests share the release build's driver caches (PoCL's
# kernels, Mesa's shaders; tests/CMakeLists.txt): the drivers do not compile
# every kernel again under ASan. loom's own caches stay per build.
asan: deps
	cmake -S . -B $(ASAN_BUILD) -DLOOM_WERROR=ON -DLOOM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DLOOM_TEST_DRIVER_CACHE=$(CURDIR)/$(BUILD)/cache $(CMAKE_FLAGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The demo: train the CNN on Fashion-MNIST for 2 epochs on the best backend.
demo: build
	./$(BUILD)/loom train --data fashion-mnist --model cnn --epochs 2 --backend auto

test-release: build
	cd $(BUILD) && ctest --output-on-failure --output-junit ctest.xml -j $(JOBS)

# intercept_tls_get_addr=0: LeakSanitizer's scan of dynamically loaded libraries'
# thread-local blocks read a bogus range (DTLS at 0x10caf) and its tracer crashed
# ("Tracer caught signal 11") in test-models-resnet when lavapipe found every shader
# in the release build's Mesa cache (a fresh cache passed); those are the drivers'
# blocks, whose allocations tests/lsan.supp suppresses anyway
test-asan: asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	  ctest --output-on-failure --output-junit ctest.xml -j $(JOBS)

test: test-release test-asan

# Install the headers, libloom.a, libloom.so, the loom tool, loom.pc and the
# CMake package under PREFIX (cmake --install works the same way).
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# A Debian package of the same files (apt install ./$(BUILD)/loom_*.deb).
deb: build
	cd $(BUILD) && cpack -G DEB

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
