// Fold assignment for k-fold bagging: every row gets one fold per bagging set, stratified by
// class for classification, from a counter-based draw keyed by (seed, set, row) so the folds
// do not depend on the thread count or on the order models are trained in.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tabforge::ensemble {

// The fold (0..folds-1) of each row. With `stratified`, labels are class indices and each
// class's rows are dealt over the folds in a random order, continuing from where the previous
// class stopped, so every fold holds each class in proportion and fold sizes differ by at most
// one row.
std::vector<std::int32_t> AssignFolds(std::span<const double> labels, bool stratified, int folds,
                                      std::uint64_t seed, int set);

// A holdout split: 1 for each held-out row. Each stratum (rows of equal `strata` value: class
// indices, or one value for all rows) gives round(fraction x its rows) of them, drawn at
// random from (seed, stream, row).
std::vector<std::uint8_t> HoldOutRows(std::span<const double> strata, double fraction,
                                      std::uint64_t seed, std::uint64_t stream);

}  // namespace tabforge::ensemble
