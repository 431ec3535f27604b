#include "metrics/metric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tabforge::metrics {
namespace {

// The inputs below are typed identically into the scikit-learn script that produced the
// expected values (scikit-learn 1.9.1, scipy 1.17.1, numpy 2.4.6):
//   binary:      y_b, p1 (positive-class probability; rows are {1 - p1, p1}), w_b
//   multiclass:  y_m, P_m (3 classes), w_m
//   absent:      y_a, P_a (4 classes; class 3 never true, predicted only in a weight-0 row), w_a
//   regression:  y_r, pred_r, w_r
// Each has ties: equal scores across classes (ranking ties), argmax ties (0.5/0.5 and
// 0.4/0.4 rows go to the lower class), equal targets and equal predictions (rank ties).
struct Dataset {
  std::vector<double> y_true;
  std::vector<double> values;
  int num_classes = 1;
  std::vector<double> weights;
};

Dataset BinaryData() {
  const std::vector<double> positive = {0.1, 0.8,  0.6, 0.6,  0.35, 0.2, 0.5, 0.9,
                                        0.5, 0.35, 0.7, 0.05, 0.6,  0.2, 0.8, 0.4};
  Dataset data;
  data.y_true = {0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0};
  for (double proba : positive) {
    data.values.push_back(1.0 - proba);
    data.values.push_back(proba);
  }
  data.num_classes = 2;
  data.weights = {1, 2, 0.5, 1, 3, 1, 0, 2, 1, 1.5, 1, 2, 0.5, 1, 1, 2};
  return data;
}

Dataset MulticlassData() {
  Dataset data;
  data.y_true = {0, 1, 2, 2, 1, 0, 1, 2, 0, 1, 2, 2, 0, 1, 1};
  data.values = {.7, .2,  .1,  .2, .5, .3, .1, .3, .6, .4,  .4, .2,  .3, .3, .4,
                 .5, .25, .25, .1, .8, .1, .2, .2, .6, .25, .5, .25, .6, .3, .1,
                 .3, .2,  .5,  .1, .6, .3, .4, .3, .3, .3,  .4, .3,  .2, .2, .6};
  data.num_classes = 3;
  data.weights = {1, 2, 1, 0.5, 1, 3, 1, 2, 1, 0, 1, 1.5, 2, 1, 1};
  return data;
}

Dataset AbsentClassData() {
  Dataset data;
  data.y_true = {0, 1, 2, 0, 1, 2, 0, 1, 2, 1};
  data.values = {.6, .2, .1, .1, .1, .7, .1, .1, .2, .2, .5, .1, .3, .4, .2, .1, .1, .6, .2, .1,
                 .1, .1, .2, .6, .7, .1, .1, .1, .2, .3, .4, .1, .3, .3, .3, .1, .1, .5, .3, .1};
  data.num_classes = 4;
  data.weights = {1, 1, 2, 1, 1, 0, 1, 1, 1, 2};
  return data;
}

Dataset RegressionData() {
  Dataset data;
  data.y_true = {3.0, -1.5, 2.0, 2.0, 7.5, 0.5, 4.0, -2.0, 1.0, 3.0, 6.0, 2.5, -0.5, 5.0};
  data.values = {2.5, -1.2, 2.0, 3.0, 6.0, 1.1, 4.0, -1.0, 1.25, 2.5, 6.8, 2.6, 0.5, 3.8};
  data.weights = {1, 2, 1, 0.5, 3, 1, 0, 2, 1, 1, 1.5, 1, 2, 1};
  return data;
}

enum class Data { kBinary, kMulticlass, kAbsentClass, kRegression };

Dataset Load(Data data) {
  switch (data) {
    case Data::kBinary:
      return BinaryData();
    case Data::kMulticlass:
      return MulticlassData();
    case Data::kAbsentClass:
      return AbsentClassData();
    case Data::kRegression:
      return RegressionData();
  }
  return {};
}

double ScoreOn(const Dataset& data, std::string_view metric, bool weighted,
               const MetricParams& params = {}) {
  const std::span<const double> weights =
      weighted ? std::span<const double>(data.weights) : std::span<const double>();
  return Score(metric, data.y_true, Predictions{data.values, data.num_classes}, weights, params);
}

struct Reference {
  const char* metric;
  Data data;
  bool weighted;
  double expected;
  double quantile = 0.5;
};

// Expected values printed by scikit-learn 1.9.1 / scipy 1.17.1 on the datasets above, with
// yp = P.argmax(1) and sw = the weights (or None when unweighted):
//   accuracy            sklearn.metrics.accuracy_score(y, yp, sample_weight=sw)
//   balanced_accuracy   balanced_accuracy_score(y, yp, sample_weight=sw)
//   log_loss            log_loss(y, P, sample_weight=sw, labels=range(k)); no probability is
//                       near 0 or 1, so sklearn 1.9's clip agrees with the 1e-15 clip here
//   f1/precision/recall_{avg}  f1_score(y, yp, average=avg, sample_weight=sw), etc.
//   f1/precision/recall f1_score(y, yp, sample_weight=sw), etc. (average="binary")
//   mcc                 matthews_corrcoef(y, yp, sample_weight=sw)
//   roc_auc             roc_auc_score(y, P[:, 1], sample_weight=sw); roc_auc_ovr on binary
//                       data is the same call
//   roc_auc_ovr         roc_auc_score(y, P, multi_class="ovr", average="macro", sample_weight=sw)
//   average_precision   average_precision_score(y, P[:, 1], sample_weight=sw)
//   regression          root_mean_squared_error, mean_squared_error, mean_absolute_error,
//                       median_absolute_error, r2_score, mean_absolute_percentage_error,
//                       mean_pinball_loss(alpha=quantile), each with sample_weight=sw;
//                       scipy.stats.pearsonr(y, pred).statistic, spearmanr(y, pred).statistic
constexpr Reference kReferences[] = {
    {"accuracy", Data::kBinary, false, 0.6875},
    {"balanced_accuracy", Data::kBinary, false, 0.6875},
    {"log_loss", Data::kBinary, false, 0.5999699501263567},
    {"f1_macro", Data::kBinary, false, 0.6862745098039216},
    {"precision_macro", Data::kBinary, false, 0.6904761904761905},
    {"recall_macro", Data::kBinary, false, 0.6875},
    {"f1_micro", Data::kBinary, false, 0.6875},
    {"precision_micro", Data::kBinary, false, 0.6875},
    {"recall_micro", Data::kBinary, false, 0.6875},
    {"f1_weighted", Data::kBinary, false, 0.6862745098039216},
    {"precision_weighted", Data::kBinary, false, 0.6904761904761905},
    {"recall_weighted", Data::kBinary, false, 0.6875},
    {"roc_auc", Data::kBinary, false, 0.734375},
    {"roc_auc_ovr", Data::kBinary, false, 0.734375},
    {"average_precision", Data::kBinary, false, 0.7083333333333334},
    {"f1", Data::kBinary, false, 0.6666666666666666},
    {"precision", Data::kBinary, false, 0.7142857142857143},
    {"recall", Data::kBinary, false, 0.625},
    {"mcc", Data::kBinary, false, 0.3779644730092272},
    {"accuracy", Data::kBinary, true, 0.6585365853658537},
    {"balanced_accuracy", Data::kBinary, true, 0.6674641148325359},
    {"log_loss", Data::kBinary, true, 0.5659124434080454},
    {"f1_macro", Data::kBinary, true, 0.6566985645933014},
    {"precision_macro", Data::kBinary, true, 0.675},
    {"recall_macro", Data::kBinary, true, 0.6674641148325359},
    {"f1_micro", Data::kBinary, true, 0.6585365853658537},
    {"precision_micro", Data::kBinary, true, 0.6585365853658537},
    {"recall_micro", Data::kBinary, true, 0.6585365853658537},
    {"f1_weighted", Data::kBinary, true, 0.6548605438207491},
    {"precision_weighted", Data::kBinary, true, 0.6804878048780487},
    {"recall_weighted", Data::kBinary, true, 0.6585365853658537},
    {"roc_auc", Data::kBinary, true, 0.7535885167464115},
    {"roc_auc_ovr", Data::kBinary, true, 0.7535885167464115},
    {"average_precision", Data::kBinary, true, 0.7750151282409348},
    {"f1", Data::kBinary, true, 0.631578947368421},
    {"precision", Data::kBinary, true, 0.75},
    {"recall", Data::kBinary, true, 0.5454545454545454},
    {"mcc", Data::kBinary, true, 0.34238119163116293},
    {"accuracy", Data::kMulticlass, false, 0.6},
    {"balanced_accuracy", Data::kMulticlass, false, 0.6166666666666667},
    {"log_loss", Data::kMulticlass, false, 0.9153720898119312},
    {"f1_macro", Data::kMulticlass, false, 0.604040404040404},
    {"precision_macro", Data::kMulticlass, false, 0.6},
    {"recall_macro", Data::kMulticlass, false, 0.6166666666666667},
    {"f1_micro", Data::kMulticlass, false, 0.6},
    {"precision_micro", Data::kMulticlass, false, 0.6},
    {"recall_micro", Data::kMulticlass, false, 0.6},
    {"f1_weighted", Data::kMulticlass, false, 0.5959595959595959},
    {"precision_weighted", Data::kMulticlass, false, 0.6},
    {"recall_weighted", Data::kMulticlass, false, 0.6},
    {"roc_auc_ovr", Data::kMulticlass, false, 0.7394781144781145},
    {"accuracy", Data::kMulticlass, true, 0.7368421052631579},
    {"balanced_accuracy", Data::kMulticlass, true, 0.7301587301587301},
    {"log_loss", Data::kMulticlass, true, 0.8331807308483647},
    {"f1_macro", Data::kMulticlass, true, 0.7318518518518519},
    {"precision_macro", Data::kMulticlass, true, 0.7350427350427351},
    {"recall_macro", Data::kMulticlass, true, 0.7301587301587301},
    {"f1_micro", Data::kMulticlass, true, 0.7368421052631579},
    {"precision_micro", Data::kMulticlass, true, 0.7368421052631579},
    {"recall_micro", Data::kMulticlass, true, 0.7368421052631579},
    {"f1_weighted", Data::kMulticlass, true, 0.7401169590643274},
    {"precision_weighted", Data::kMulticlass, true, 0.7449392712550607},
    {"recall_weighted", Data::kMulticlass, true, 0.7368421052631579},
    {"roc_auc_ovr", Data::kMulticlass, true, 0.8260073260073261},
    {"accuracy", Data::kAbsentClass, false, 0.6},
    {"balanced_accuracy", Data::kAbsentClass, false, 0.5833333333333333},
    {"log_loss", Data::kAbsentClass, false, 0.8342651821941244},
    {"f1_macro", Data::kAbsentClass, false, 0.4541666666666666},
    {"precision_macro", Data::kAbsentClass, false, 0.47916666666666663},
    {"recall_macro", Data::kAbsentClass, false, 0.43749999999999994},
    {"f1_micro", Data::kAbsentClass, false, 0.6},
    {"precision_micro", Data::kAbsentClass, false, 0.6},
    {"recall_micro", Data::kAbsentClass, false, 0.6},
    {"f1_weighted", Data::kAbsentClass, false, 0.62},
    {"precision_weighted", Data::kAbsentClass, false, 0.65},
    {"recall_weighted", Data::kAbsentClass, false, 0.6},
    {"accuracy", Data::kAbsentClass, true, 0.7272727272727273},
    {"balanced_accuracy", Data::kAbsentClass, true, 0.7111111111111111},
    {"log_loss", Data::kAbsentClass, true, 0.7381371155115487},
    {"f1_macro", Data::kAbsentClass, true, 0.5333333333333333},
    {"precision_macro", Data::kAbsentClass, true, 0.5333333333333333},
    {"recall_macro", Data::kAbsentClass, true, 0.5333333333333333},
    {"f1_micro", Data::kAbsentClass, true, 0.7272727272727273},
    {"precision_micro", Data::kAbsentClass, true, 0.7272727272727273},
    {"recall_micro", Data::kAbsentClass, true, 0.7272727272727273},
    {"f1_weighted", Data::kAbsentClass, true, 0.7272727272727273},
    {"precision_weighted", Data::kAbsentClass, true, 0.7272727272727273},
    {"recall_weighted", Data::kAbsentClass, true, 0.7272727272727273},
    {"root_mean_squared_error", Data::kRegression, false, 0.772403484493139},
    {"mean_squared_error", Data::kRegression, false, 0.5966071428571428},
    {"mean_absolute_error", Data::kRegression, false, 0.625},
    {"median_absolute_error", Data::kRegression, false, 0.55},
    {"r2", Data::kRegression, false, 0.9145992331568377},
    {"mean_absolute_percentage_error", Data::kRegression, false, 0.39976190476190476},
    {"pinball_loss", Data::kRegression, false, 0.3125},
    {"pinball_loss", Data::kRegression, false, 0.27392857142857147, 0.9},
    {"root_mean_squared_error", Data::kRegression, true, 0.9056151991264771},
    {"mean_squared_error", Data::kRegression, true, 0.8201388888888889},
    {"mean_absolute_error", Data::kRegression, true, 0.7749999999999999},
    {"median_absolute_error", Data::kRegression, true, 0.7999999999999998},
    {"r2", Data::kRegression, true, 0.9248993146329401},
    {"mean_absolute_percentage_error", Data::kRegression, true, 0.472962962962963},
    {"pinball_loss", Data::kRegression, true, 0.38749999999999996},
    {"pinball_loss", Data::kRegression, true, 0.3752777777777779, 0.9},
    {"pearsonr", Data::kRegression, false, 0.9656132962281899},
    {"spearmanr", Data::kRegression, false, 0.9393611001541275},
};

TEST(MetricScore, MatchesScikitLearnOnSharedInputs) {
  for (const Reference& reference : kReferences) {
    SCOPED_TRACE(::testing::Message()
                 << reference.metric << " data=" << static_cast<int>(reference.data)
                 << " weighted=" << reference.weighted << " quantile=" << reference.quantile);
    const double actual = ScoreOn(Load(reference.data), reference.metric, reference.weighted,
                                  MetricParams{reference.quantile});
    EXPECT_NEAR(actual, reference.expected, 1e-12);
  }
}

TEST(MetricScore, EveryMetricHasAScikitLearnReference) {
  for (std::string_view name : MetricNames()) {
    bool found = false;
    for (const Reference& reference : kReferences) found = found || reference.metric == name;
    EXPECT_TRUE(found) << name << " has no reference value";
  }
}

// Scores of hand-made inputs: regression rows (num_classes = 1) and probability rows.
double Regress(std::string_view metric, std::vector<double> y_true, std::vector<double> pred,
               std::vector<double> weights = {}, const MetricParams& params = {}) {
  return Score(metric, y_true, Predictions{pred, 1}, weights, params);
}

double Classify(std::string_view metric, std::vector<double> y_true, std::vector<double> proba,
                int num_classes, std::vector<double> weights = {}) {
  return Score(metric, y_true, Predictions{proba, num_classes}, weights);
}

// Binary rows {1 - p, p} from positive-class probabilities.
std::vector<double> BinaryRows(const std::vector<double>& positive) {
  std::vector<double> rows;
  for (double proba : positive) {
    rows.push_back(1.0 - proba);
    rows.push_back(proba);
  }
  return rows;
}

// Runs `call` and returns the InvalidInput message it throws (fails the test if it does not).
template <typename Call>
std::string InvalidInputMessage(Call call) {
  try {
    call();
  } catch (const InvalidInput& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected InvalidInput";
  return "";
}

TEST(MetricScore, RankingByHand) {
  // Positives score 0.35 and 0.8, negatives 0.1 and 0.4: of the 4 positive/negative pairs,
  // 3 are ordered correctly, so AUC = 3/4 (sklearn's documented example gives 0.75).
  const std::vector<double> ranked = BinaryRows({0.1, 0.4, 0.35, 0.8});
  EXPECT_DOUBLE_EQ(Classify("roc_auc", {0, 0, 1, 1}, ranked, 2), 0.75);
  // Thresholds 0.8 (precision 1, recall 1/2) and 0.35 (precision 2/3, recall 1):
  // AP = 1/2 * 1 + 1/2 * 2/3 = 5/6 (sklearn's documented example gives 0.8333...).
  EXPECT_DOUBLE_EQ(Classify("average_precision", {0, 0, 1, 1}, ranked, 2), 5.0 / 6.0);
  // One positive tied with one negative: the tie counts one half.
  EXPECT_DOUBLE_EQ(Classify("roc_auc", {0, 1}, BinaryRows({0.5, 0.5}), 2), 0.5);
  // The tie is one threshold for AP: precision 1/2 at recall 1.
  EXPECT_DOUBLE_EQ(Classify("average_precision", {0, 1}, BinaryRows({0.5, 0.5}), 2), 0.5);
  // Weight 3 on the misordered negative (0.4 above the positive 0.35): AUC = (1*2 + 3*1) /
  // (2 positives * 4 negative weight) = 5/8.
  EXPECT_DOUBLE_EQ(Classify("roc_auc", {0, 0, 1, 1}, ranked, 2, {1, 3, 1, 1}), 5.0 / 8.0);
  // A zero-weight row changes nothing, even at the top of the ranking.
  EXPECT_DOUBLE_EQ(Classify("roc_auc", {0, 0, 1, 1, 0}, BinaryRows({0.1, 0.4, 0.35, 0.8, 0.9}), 2,
                            {1, 1, 1, 1, 0}),
                   0.75);
}

TEST(MetricScore, LabelMetricsByHand) {
  // Argmax ties go to the lower class: the 0.5/0.5 row predicts class 0.
  EXPECT_DOUBLE_EQ(Classify("accuracy", {0}, {0.5, 0.5}, 2), 1.0);
  EXPECT_DOUBLE_EQ(Classify("accuracy", {1}, {0.5, 0.5}, 2), 0.0);
  EXPECT_DOUBLE_EQ(Classify("accuracy", {2}, {0.2, 0.4, 0.4}, 3), 0.0);
  // Weighted accuracy: the correct row has weight 3 of 4.
  EXPECT_DOUBLE_EQ(Classify("accuracy", {0, 1}, BinaryRows({0.2, 0.3}), 2, {3, 1}), 0.75);
  // Nothing predicted positive: precision is 0/0, reported as 0 (sklearn's zero_division);
  // f1 = 2*0 / (1 + 0) = 0; MCC is 0 when a marginal is constant.
  const std::vector<double> all_negative = BinaryRows({0.1, 0.2, 0.3});
  EXPECT_EQ(Classify("precision", {0, 1, 0}, all_negative, 2), 0.0);
  EXPECT_EQ(Classify("f1", {0, 1, 0}, all_negative, 2), 0.0);
  EXPECT_EQ(Classify("mcc", {0, 1, 0}, all_negative, 2), 0.0);
  // Perfect predictions: MCC 1; fully inverted: -1.
  EXPECT_DOUBLE_EQ(Classify("mcc", {0, 1, 1}, BinaryRows({0.2, 0.9, 0.7}), 2), 1.0);
  EXPECT_DOUBLE_EQ(Classify("mcc", {1, 0, 0}, BinaryRows({0.2, 0.9, 0.7}), 2), -1.0);
  // balanced_accuracy: class 0 recall 1/2, class 1 recall 1 -> 3/4; a class only predicted
  // (never true) is left out of the mean, as sklearn does.
  EXPECT_DOUBLE_EQ(Classify("balanced_accuracy", {0, 0, 1}, BinaryRows({0.2, 0.8, 0.9}), 2), 0.75);
  EXPECT_DOUBLE_EQ(Classify("balanced_accuracy", {0, 1}, {0.9, 0.05, 0.05, 0.1, 0.1, 0.8}, 3), 0.5);
}

TEST(MetricScore, LogLossClipsAndRenormalisesLikeScikitLearn12) {
  // A true class of probability 0 is clipped to 1e-15: loss -ln(1e-15) = 34.538776...
  EXPECT_NEAR(Classify("log_loss", {1}, {1.0, 0.0}, 2), -std::log(1e-15), 1e-12);
  // Both values from scikit-learn 1.2.2's log_loss(y, P, eps=1e-15) (clip, then divide each
  // row by its clipped sum), which this implementation follows:
  EXPECT_NEAR(Classify("log_loss", {1, 1, 0}, {1.0, 0.0, 0.3, 0.7, 0.0, 1.0}, 2),
              23.144742577920038, 1e-12);
  EXPECT_NEAR(
      Classify("log_loss", {0, 2, 1}, {0.0, 0.0, 1.0, 0.2, 0.3, 0.5, 0.0, 1.0, 0.0}, 3, {1, 2, 3}),
      5.987511792671763, 1e-12);
  // Certain and right: ~1e-15, not exactly 0, because of the clip.
  EXPECT_NEAR(Classify("log_loss", {0}, {1.0, 0.0}, 2), 0.0, 1e-14);
}

TEST(MetricScore, RegressionByHand) {
  // Weighted median absolute error (sklearn >= 1.8: averaged inverted CDF). All values from
  // sklearn 1.9.1 median_absolute_error(y, pred, sample_weight=w), and by hand:
  // errors 1,2,3,4 unit weights: the median 2.5.
  EXPECT_DOUBLE_EQ(Regress("median_absolute_error", {0, 0, 0, 0}, {1, 2, 3, 4}), 2.5);
  // Weights 1,1,2 on 1,2,3: cumulative 1,2,4 reaches half (2) exactly at 2 -> (2 + 3)/2.
  EXPECT_DOUBLE_EQ(Regress("median_absolute_error", {0, 0, 0}, {1, 2, 3}, {1, 1, 2}), 2.5);
  // Weights 3,1,1: cumulative 3 passes half (2.5) at the first value -> 1.
  EXPECT_DOUBLE_EQ(Regress("median_absolute_error", {0, 0, 0}, {1, 2, 3}, {3, 1, 1}), 1.0);
  // Exactly half at 2, the next value 3 has weight 0 and is skipped -> (2 + 4)/2 = 3.
  EXPECT_DOUBLE_EQ(Regress("median_absolute_error", {0, 0, 0, 0}, {1, 2, 3, 4}, {1, 1, 0, 2}), 3.0);
  // Trailing zero weight: cumulative 1,2,3,4,4, half 2 exactly at 2 -> (2 + 3)/2.
  EXPECT_DOUBLE_EQ(
      Regress("median_absolute_error", {0, 0, 0, 0, 0}, {1, 2, 3, 4, 5}, {1, 1, 1, 1, 0}), 2.5);

  // MAPE divides by max(|y|, DBL_EPSILON): (1e-3 / eps + 0.5) / 2; sklearn 1.9.1 prints
  // 2251799813685.498 for mean_absolute_percentage_error([0, 2], [1e-3, 1]).
  const double eps = std::numeric_limits<double>::epsilon();
  EXPECT_DOUBLE_EQ(Regress("mape", {0.0, 2.0}, {1e-3, 1.0}), (1e-3 / eps + 0.5) / 2.0);

  // Pinball at q = 0.9: under-prediction by 1 costs 0.9, over-prediction by 1 costs 0.1.
  EXPECT_DOUBLE_EQ(Regress("pinball_loss", {1, 0}, {0, 1}, {}, MetricParams{0.9}), 0.5);
  EXPECT_DOUBLE_EQ(Regress("pinball_loss", {1, 0}, {0, 1}, {3, 1}, MetricParams{0.9}),
                   (3 * 0.9 + 0.1) / 4);

  // r2 of a constant target (sklearn's force_finite): 1 when predicted exactly, else 0.
  EXPECT_EQ(Regress("r2", {2, 2, 2}, {2, 2, 2}), 1.0);
  EXPECT_EQ(Regress("r2", {2, 2, 2}, {1, 2, 3}), 0.0);
  // Predicting the weighted mean of the target scores exactly 0.
  EXPECT_DOUBLE_EQ(Regress("r2", {1, 2, 3}, {2, 2, 2}), 0.0);
  EXPECT_DOUBLE_EQ(Regress("rmse", {0, 0}, {3, 4}, {1, 1}), std::sqrt(12.5));

  // Spearman with ties: y ranks (1, 2.5, 2.5, 4), pred ranks (1, 2, 3, 4).
  // Centred: (-1.5, 0, 0, 1.5) and (-1.5, -0.5, 0.5, 1.5): r = 4.5 / sqrt(4.5 * 5).
  EXPECT_DOUBLE_EQ(Regress("spearmanr", {1, 2, 2, 3}, {10, 20, 30, 40}), 4.5 / std::sqrt(22.5));
  // Pearson of an exact linear relation is 1 (or -1).
  EXPECT_DOUBLE_EQ(Regress("pearsonr", {1, 2, 3}, {-2, -4, -6}), -1.0);
}

TEST(MetricRegistry, AliasesResolveToTheCanonicalEntry) {
  EXPECT_EQ(&GetMetric("rmse"), &GetMetric("root_mean_squared_error"));
  EXPECT_EQ(GetMetric("mse").name, "mean_squared_error");
  EXPECT_EQ(GetMetric("mae").name, "mean_absolute_error");
  EXPECT_EQ(GetMetric("mape").name, "mean_absolute_percentage_error");
  EXPECT_EQ(GetMetric("roc_auc_ovr_macro").name, "roc_auc_ovr");
  EXPECT_EQ(GetMetric("acc").name, "accuracy");
  EXPECT_EQ(GetMetric("nll").name, "log_loss");
  EXPECT_EQ(GetMetric("pinball").name, "pinball_loss");
  const Dataset data = RegressionData();
  EXPECT_EQ(ScoreOn(data, "rmse", true), ScoreOn(data, "root_mean_squared_error", true));
}

TEST(MetricRegistry, NamesAreCanonicalAndInOrder) {
  const std::vector<std::string_view> names = MetricNames();
  ASSERT_EQ(names.size(), 28u);
  EXPECT_EQ(names.front(), "accuracy");
  EXPECT_EQ(names.back(), "pinball_loss");
  for (std::string_view name : names) EXPECT_EQ(GetMetric(name).name, name);
}

TEST(MetricRegistry, DirectionAndCapabilityFlags) {
  for (std::string_view name :
       {"log_loss", "root_mean_squared_error", "mean_squared_error", "mean_absolute_error",
        "median_absolute_error", "mean_absolute_percentage_error", "pinball_loss"}) {
    EXPECT_FALSE(GetMetric(name).greater_is_better) << name;
  }
  for (std::string_view name :
       {"accuracy", "balanced_accuracy", "roc_auc", "roc_auc_ovr", "average_precision", "f1",
        "f1_macro", "precision_weighted", "recall_micro", "mcc", "r2", "pearsonr", "spearmanr"}) {
    EXPECT_TRUE(GetMetric(name).greater_is_better) << name;
  }
  for (std::string_view name : {"log_loss", "roc_auc", "roc_auc_ovr", "average_precision"}) {
    EXPECT_TRUE(GetMetric(name).needs_proba) << name;
  }
  EXPECT_FALSE(GetMetric("accuracy").needs_proba);
  for (std::string_view name :
       {"roc_auc", "average_precision", "f1", "precision", "recall", "mcc"}) {
    EXPECT_TRUE(GetMetric(name).binary_only) << name;
  }
  EXPECT_FALSE(GetMetric("f1_macro").binary_only);
  EXPECT_FALSE(GetMetric("pearsonr").supports_weights);
  EXPECT_FALSE(GetMetric("spearmanr").supports_weights);
  EXPECT_TRUE(GetMetric("median_absolute_error").supports_weights);
  EXPECT_TRUE(GetMetric("r2").for_regression);
  EXPECT_FALSE(GetMetric("r2").for_classification);
}

TEST(MetricRegistry, ValidityAndDefaults) {
  EXPECT_TRUE(IsValidFor(GetMetric("roc_auc"), ProblemType::kBinary));
  EXPECT_FALSE(IsValidFor(GetMetric("roc_auc"), ProblemType::kMulticlass));
  EXPECT_TRUE(IsValidFor(GetMetric("roc_auc_ovr"), ProblemType::kMulticlass));
  EXPECT_TRUE(IsValidFor(GetMetric("f1_macro"), ProblemType::kMulticlass));
  EXPECT_FALSE(IsValidFor(GetMetric("accuracy"), ProblemType::kRegression));
  EXPECT_FALSE(IsValidFor(GetMetric("rmse"), ProblemType::kBinary));
  EXPECT_TRUE(IsValidFor(GetMetric("rmse"), ProblemType::kRegression));
  EXPECT_EQ(DefaultMetric(ProblemType::kBinary), "accuracy");
  EXPECT_EQ(DefaultMetric(ProblemType::kMulticlass), "accuracy");
  EXPECT_EQ(DefaultMetric(ProblemType::kRegression), "root_mean_squared_error");
}

TEST(MetricRegistry, IsBetterFollowsTheDirection) {
  EXPECT_TRUE(IsBetter(GetMetric("accuracy"), 0.9, 0.8));
  EXPECT_FALSE(IsBetter(GetMetric("accuracy"), 0.8, 0.9));
  EXPECT_FALSE(IsBetter(GetMetric("accuracy"), 0.8, 0.8));  // strict
  EXPECT_TRUE(IsBetter(GetMetric("log_loss"), 0.3, 0.4));
  EXPECT_FALSE(IsBetter(GetMetric("rmse"), 2.0, 1.0));
  EXPECT_FALSE(IsBetter(GetMetric("rmse"), 1.0, 1.0));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(IsBetter(GetMetric("r2"), nan, 0.5));
  EXPECT_TRUE(IsBetter(GetMetric("rmse"), 5.0, std::numeric_limits<double>::infinity()));
}

TEST(MetricErrors, UnknownNameListsValidNames) {
  const std::string message = InvalidInputMessage([] { GetMetric("rocauc"); });
  EXPECT_NE(message.find("rocauc"), std::string::npos) << message;
  for (std::string_view name : {"accuracy", "roc_auc_ovr", "pinball_loss", "rmse"}) {
    EXPECT_NE(message.find(name), std::string::npos) << message;
  }
  EXPECT_THROW(Regress("RMSE", {1, 2}, {1, 2}), InvalidInput);  // names are case-sensitive
}

TEST(MetricErrors, WrongProblemTypeNamesTheMetricAndRemedy) {
  const Dataset multiclass = MulticlassData();
  std::string message = InvalidInputMessage([&] { ScoreOn(multiclass, "roc_auc", false); });
  EXPECT_NE(message.find("'roc_auc'"), std::string::npos) << message;
  EXPECT_NE(message.find("use roc_auc_ovr for multiclass"), std::string::npos) << message;
  message = InvalidInputMessage([&] { ScoreOn(multiclass, "f1", false); });
  EXPECT_NE(message.find("f1_macro"), std::string::npos) << message;
  for (const char* binary_only : {"average_precision", "precision", "recall", "mcc"}) {
    EXPECT_THROW(ScoreOn(multiclass, binary_only, false), InvalidInput) << binary_only;
  }
  message = InvalidInputMessage([] { ScoreOn(BinaryData(), "rmse", false); });
  EXPECT_NE(message.find("'root_mean_squared_error' is a regression metric"), std::string::npos)
      << message;
  message = InvalidInputMessage([] { ScoreOn(RegressionData(), "accuracy", false); });
  EXPECT_NE(message.find("classification metric"), std::string::npos) << message;
  EXPECT_THROW(Score("accuracy", std::vector<double>{0}, Predictions{std::vector<double>{}, 0}),
               InvalidInput);
}

TEST(MetricErrors, BadLabelsProbabilitiesAndSizes) {
  // Class index out of range, negative, or not an integer.
  EXPECT_THROW(Classify("accuracy", {0, 3}, {.5, .3, .2, .5, .3, .2}, 3), InvalidInput);
  EXPECT_THROW(Classify("accuracy", {0, -1}, BinaryRows({.2, .3}), 2), InvalidInput);
  EXPECT_THROW(Classify("accuracy", {0, 0.5}, BinaryRows({.2, .3}), 2), InvalidInput);
  // Predictions of the wrong size: 3 rows need 6 values for 2 classes.
  const std::string message = InvalidInputMessage([] {
    Classify("log_loss", {0, 1, 1}, {.5, .5, .5, .5}, 2);
  });
  EXPECT_NE(message.find("'log_loss'"), std::string::npos) << message;
  EXPECT_NE(message.find("expected 6"), std::string::npos) << message;
  EXPECT_THROW(Regress("mae", {1, 2, 3}, {1, 2}), InvalidInput);
  // Not probabilities: outside [0, 1], NaN, or rows not summing to 1.
  EXPECT_THROW(Classify("roc_auc", {0, 1}, {1.5, -0.5, 0.5, 0.5}, 2), InvalidInput);
  EXPECT_THROW(Classify("roc_auc", {0, 1}, {std::nan(""), 0.5, 0.5, 0.5}, 2), InvalidInput);
  EXPECT_THROW(Classify("log_loss", {0, 1}, {0.5, 0.6, 0.5, 0.5}, 2), InvalidInput);
  // Non-finite regression values.
  EXPECT_THROW(Regress("mse", {1, std::nan("")}, {1, 2}), InvalidInput);
  // Empty input.
  EXPECT_THROW(Regress("mse", {}, {}), InvalidInput);
  EXPECT_THROW(Classify("accuracy", {}, {}, 2), InvalidInput);
}

TEST(MetricErrors, BadWeights) {
  EXPECT_THROW(Regress("mse", {1, 2}, {1, 2}, {1}), InvalidInput);
  EXPECT_THROW(Regress("mse", {1, 2}, {1, 2}, {1, -1}), InvalidInput);
  EXPECT_THROW(Regress("mse", {1, 2}, {1, 2}, {0, 0}), InvalidInput);
  EXPECT_THROW(Regress("pearsonr", {1, 2, 3}, {1, 3, 2}, {1, 1, 1}), NotSupported);
  EXPECT_THROW(Regress("spearmanr", {1, 2, 3}, {1, 3, 2}, {1, 1, 1}), NotSupported);
}

TEST(MetricErrors, DegenerateData) {
  // roc_auc with one class present, or the other class only at weight 0.
  std::string message = InvalidInputMessage([] {
    Classify("roc_auc", {1, 1}, BinaryRows({.2, .7}), 2);
  });
  EXPECT_NE(message.find("one class"), std::string::npos) << message;
  EXPECT_THROW(Classify("roc_auc", {0, 1}, BinaryRows({.2, .7}), 2, {1, 0}), InvalidInput);
  EXPECT_THROW(Classify("average_precision", {0, 0}, BinaryRows({.2, .7}), 2), InvalidInput);
  // roc_auc_ovr needs every class: class 3 of the 4-class data never occurs.
  message = InvalidInputMessage([] { ScoreOn(AbsentClassData(), "roc_auc_ovr", false); });
  EXPECT_NE(message.find("class 3"), std::string::npos) << message;
  // Correlations of a constant series, and of a single row.
  message = InvalidInputMessage([] { Regress("pearsonr", {1, 2, 3}, {5, 5, 5}); });
  EXPECT_NE(message.find("constant"), std::string::npos) << message;
  EXPECT_THROW(Regress("spearmanr", {4, 4, 4}, {1, 2, 3}), InvalidInput);
  EXPECT_THROW(Regress("pearsonr", {1}, {2}), InvalidInput);
  EXPECT_THROW(Regress("r2", {1}, {2}), InvalidInput);
  // pinball_loss's quantile must lie in (0, 1).
  EXPECT_THROW(Regress("pinball_loss", {1, 2}, {1, 2}, {}, MetricParams{1.0}), InvalidInput);
  EXPECT_THROW(Regress("pinball_loss", {1, 2}, {1, 2}, {}, MetricParams{0.0}), InvalidInput);
}

}  // namespace
}  // namespace tabforge::metrics
