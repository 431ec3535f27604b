# The two commands of the README, and their steps.
#   make run    install dependencies, build, fit on the Adult data (60 s) and evaluate on its test set
#   make test   install dependencies, build, and run the test suite
PRESET ?= release
BUILD := build/$(PRESET)
JOBS ?= 2
DATASETS ?= $(abspath ../shared/datasets)
ADULT_TRAIN_URL := https://autogluon.s3.amazonaws.com/datasets/Inc/train.csv
ADULT_TEST_URL := https://autogluon.s3.amazonaws.com/datasets/Inc/test.csv
MODEL_DIR ?= $(BUILD)/adult-model

.PHONY: run test deps build clean

deps:
	@scripts/install-deps.sh

build: deps
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET) -j $(JOBS)

run: build
	@if [ -f "$(DATASETS)/adult_train.csv.gz" ]; then \
	  train="$(DATASETS)/adult_train.csv.gz"; test="$(DATASETS)/adult_test.csv.gz"; \
	else \
	  echo "make run: $(DATASETS) not found; reading the Adult data from $(ADULT_TRAIN_URL)"; \
	  train="$(ADULT_TRAIN_URL)"; test="$(ADULT_TEST_URL)"; \
	fi; \
	$(BUILD)/tabforge fit --train "$$train" --label class --time-limit 60 -o "$(MODEL_DIR)" || { \
	  echo "make run: the fit failed (if the data could not be read: neither $(DATASETS) nor $(ADULT_TRAIN_URL) is reachable)"; exit 1; }; \
	$(BUILD)/tabforge evaluate -m "$(MODEL_DIR)" --data "$$test"

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

clean:
	rm -rf build
