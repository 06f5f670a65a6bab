# The two commands that do everything on a fresh Debian machine:
#   make run    install missing packages, build, run the default simulation
#   make test   install missing packages, build, run the test suite
#               (normal build, then the sanitizer build)
BUILD      ?= build
BUILD_SAN  ?= build-san
JOBS       ?= $(shell nproc)
SAN_REPORTS = $(abspath $(BUILD_SAN))/sanitizer-reports
CMAKE_ARGS ?=

# The sanitizer pass of `make test` leaves out the tests labelled
# san-slow (tests/CMakeLists.txt) and runs one in 16 of the fuzz test's
# hostile cases (and its valid files through 3 of its 6 commands): CI's
# whole suite stays under 15 minutes on 2 cores.
# `make test-full` runs everything under the sanitizers too.
SAN_EXCLUDE     ?= heavy|san-slow
SAN_FUZZ_SAMPLE ?= 16

.PHONY: all deps build run test test-full test-fast test-san clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/banyan run

test: build
	@bash scripts/deps.sh test
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-san

test-full: build
	@bash scripts/deps.sh test
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-san SAN_EXCLUDE=heavy SAN_FUZZ_SAMPLE=1

# The suite under AddressSanitizer + UBSan + LeakSanitizer (host code, no
# CUDA); the heaviest accuracy runs are left to the optimised build above.
# Every report of every process (also of a banyan command that a shell
# test expects to fail, whose exit status cannot tell a leak from the
# expected error) goes to a file in SAN_REPORTS: any file there fails it.
test-san: deps
	@cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBANYAN_SANITIZE=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD_SAN) -j $(JOBS)
	@rm -rf $(SAN_REPORTS) && mkdir -p $(SAN_REPORTS)
	cd $(BUILD_SAN) && ASAN_OPTIONS=detect_leaks=1:log_path=$(SAN_REPORTS)/asan \
	  UBSAN_OPTIONS=print_stacktrace=1:log_path=$(SAN_REPORTS)/ubsan FUZZ_SAMPLE=$(SAN_FUZZ_SAMPLE) \
	  ctest --output-on-failure -j $(JOBS) -LE '$(SAN_EXCLUDE)'; rc=$$?; \
	  bash $(CURDIR)/scripts/sanitizer-reports.sh $(SAN_REPORTS) || rc=1; exit $$rc

clean:
	rm -rf $(BUILD) $(BUILD_SAN)
