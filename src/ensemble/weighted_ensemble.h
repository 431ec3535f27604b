// Greedy ensemble selection with replacement (Caruana et al., 2004), as AutoGluon's
// WeightedEnsemble: starting from nothing, each step adds the member whose inclusion gives the
// best eval-metric score of the averaged predictions; the weights are the members' counts in
// the best-scoring prefix of the steps, so the ensemble scores at least as well as its best
// member on the rows it was fitted on.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/types.h"

namespace tabforge::ensemble {

struct EnsembleWeights {
  std::vector<double> weights;  // one per member, summing to 1
  double score = 0;             // eval metric of the weighted predictions
};

// `members[m]` holds row-major n x outputs predictions (class probabilities or values) for
// the same n rows, whose `labels` are class indices or targets. A metric that reads only the
// predicted labels (accuracy, f1, ...) ties often; its ties, between members at a step and
// between prefixes, go to the lower log loss, so that among equally accurate blends the better
// calibrated one is kept. Other ties go to the lowest member and the shortest prefix.
EnsembleWeights SelectEnsemble(const std::vector<std::span<const double>>& members, int outputs,
                               std::span<const double> labels, const std::string& metric,
                               int ensemble_size = 25);

// The weighted average of `members` (weights as SelectEnsemble returns them).
std::vector<double> BlendPredictions(const std::vector<std::span<const double>>& members,
                                     std::span<const double> weights);

}  // namespace tabforge::ensemble
