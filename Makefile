# The two commands of the README, and their steps.
#   make run    install dependencies, build, and run tabforge on real data
#   make test   install dependencies, build, and run the test suite
PRESET ?= release
BUILD := build/$(PRESET)
JOBS ?= 2
DATASETS ?= $(abspath ../shared/datasets)
ADULT_TRAIN_URL := https://autogluon.s3.amazonaws.com/datasets/Inc/train.csv

.PHONY: run test deps build clean

deps:
	@scripts/install-deps.sh

build: deps
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET) -j $(JOBS)

run: build
	@if [ -f "$(DATASETS)/adult_train.csv.gz" ]; then \
	  $(BUILD)/tabforge inspect "$(DATASETS)/adult_train.csv.gz" --label class; \
	else \
	  echo "make run: $(DATASETS) not found; reading the Adult data from $(ADULT_TRAIN_URL)"; \
	  $(BUILD)/tabforge inspect "$(ADULT_TRAIN_URL)" --label class || { \
	    echo "make run: neither $(DATASETS) nor $(ADULT_TRAIN_URL) could be read"; exit 1; }; \
	fi

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

clean:
	rm -rf build
