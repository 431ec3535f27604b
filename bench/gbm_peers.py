#!/usr/bin/env python3
"""GBM on Adult: tabforge's gbm_bench beside LightGBM and XGBoost (hist) in the same run.

    python3 bench/gbm_peers.py [--build build/release]   (GBM_THREADS, default 2; needs lightgbm, xgboost,
                                                                        pandas from PyPI)
Configurations (the GBM issue's accuracy bars):
  defaults  100 rounds, 31 leaves, learning rate 0.1
  long      1000 rounds, learning rate 0.05, 63 leaves, early stopping (50 rounds) on a 10%
            validation split of train (the same rows for every library: tabforge's counter-based
            generator is reproduced here)
Categorical columns are native categoricals for every library. Each configuration runs tabforge
twice: with its own (LightGBM's) leaf rules, and with XGBoost's defaults for them (lambda_l2 1,
min_sum_hessian_in_leaf 1 as min_child_weight, no row-count minimum), the settings equivalent to
the XGBoost run beside it. Prints one JSON line per run.
"""
import json
import os
import sys
import time

from bench_common import ROOT, parse_args, realtime_prefix, run_json, uniform

# XGBoost's default leaf rules in tabforge's (LightGBM's) names.
XGBOOST_LEAF_RULES = {"lambda_l2": 1, "min_sum_hessian_in_leaf": 1, "min_data_in_leaf": 1}

CONFIGS = {
    "defaults": {"num_iterations": 100, "learning_rate": 0.1, "num_leaves": 31},
    "long": {"num_iterations": 1000, "learning_rate": 0.05, "num_leaves": 63,
             "early_stopping_round": 50},
}


def main():
    args = parse_args("unused")
    import lightgbm
    import numpy
    import pandas
    import xgboost
    from sklearn.metrics import accuracy_score, roc_auc_score

    datasets = os.path.join(ROOT, "..", "shared", "datasets")
    train = pandas.read_csv(os.path.join(datasets, "adult_train.csv.gz"))
    test = pandas.read_csv(os.path.join(datasets, "adult_test.csv.gz"))
    y_train = (train.pop("class") == ">50K").astype(int).values
    y_test = (test.pop("class") == ">50K").astype(int).values
    for column in train.columns:
        if not pandas.api.types.is_numeric_dtype(train[column]):
            categories = pandas.CategoricalDtype(sorted(train[column].dropna().unique()))
            train[column] = train[column].astype(categories)
            test[column] = test[column].astype(categories)
    held_out = numpy.array([uniform(0, 0x76616C, row) < 0.1 for row in range(len(train))])
    threads = int(os.environ.get("GBM_THREADS", "2"))
    bench = os.path.join(args.build, "bench", "gbm_bench")
    for name, config in CONFIGS.items():
        stopping = "early_stopping_round" in config
        for rules, extra in (("lightgbm", {}), ("xgboost", XGBOOST_LEAF_RULES)):
            command = realtime_prefix() + [
                bench, "--train", os.path.join(datasets, "adult_train.csv.gz"),
                "--test", os.path.join(datasets, "adult_test.csv.gz"), "--label", "class",
                "--threads", str(threads), "--params", json.dumps({**config, **extra})]
            if stopping:
                command += ["--valid-fraction", "0.1"]
            ours = run_json(command)
            ours.update({"tool": "tabforge", "config": name, "leaf_rules": rules})
            print(json.dumps(ours), flush=True)
        fit_x, fit_y = (train[~held_out], y_train[~held_out]) if stopping else (train, y_train)
        valid = [(train[held_out], y_train[held_out])] if stopping else None

        params = {"objective": "binary", "learning_rate": config["learning_rate"],
                  "num_leaves": config["num_leaves"], "num_threads": threads, "verbose": -1,
                  "max_bin": 255}
        data = lightgbm.Dataset(fit_x, fit_y)
        callbacks = [lightgbm.early_stopping(50, verbose=False)] if stopping else []
        start = time.perf_counter()
        booster = lightgbm.train(params, data, num_boost_round=config["num_iterations"],
                                 valid_sets=[lightgbm.Dataset(*valid[0], reference=data)] if stopping else None,
                                 callbacks=callbacks)
        seconds = time.perf_counter() - start
        p = booster.predict(test, num_iteration=booster.best_iteration or None)
        print(json.dumps({"tool": "lightgbm", "version": lightgbm.__version__, "config": name,
                          "threads": threads, "roc_auc": round(roc_auc_score(y_test, p), 6),
                          "accuracy": round(accuracy_score(y_test, p > 0.5), 6),
                          "train_seconds": round(seconds, 4),
                          "rounds": booster.best_iteration or config["num_iterations"]}), flush=True)

        model = xgboost.XGBClassifier(
            tree_method="hist", grow_policy="lossguide", max_leaves=config["num_leaves"],
            max_depth=0, learning_rate=config["learning_rate"],
            n_estimators=config["num_iterations"], max_bin=255, enable_categorical=True,
            n_jobs=threads, early_stopping_rounds=50 if stopping else None,
            eval_metric="logloss")
        start = time.perf_counter()
        model.fit(fit_x, fit_y, eval_set=[valid[0]] if stopping else None, verbose=False)
        seconds = time.perf_counter() - start
        p = model.predict_proba(test)[:, 1]
        print(json.dumps({"tool": "xgboost", "version": xgboost.__version__, "config": name,
                          "threads": threads, "roc_auc": round(roc_auc_score(y_test, p), 6),
                          "accuracy": round(accuracy_score(y_test, p > 0.5), 6),
                          "train_seconds": round(seconds, 4),
                          "rounds": (model.best_iteration + 1) if stopping else config["num_iterations"]}),
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
