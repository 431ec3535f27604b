#!/usr/bin/env python3
"""Batch prediction speed of one GBM: tabforge's beside LightGBM's and XGBoost's, in the same run.

    python3 bench/predict_peers.py [--build build/release] [--repeat 5] [--out FILE]
    (PREDICT_THREADS, default 2; needs lightgbm, xgboost, pandas, scikit-learn from PyPI)

Each configuration is a GBM of the best_quality portfolio's shapes (presets/
hyperparameters_default.json: GBMSmall, GBMFF, GBMLarge) trained on Adult train for a fixed
number of rounds by each library with the same parameters; then the whole Adult test set
(16,281 rows, from a pandas DataFrame for the peers, from the CSV's columns for tabforge) is
predicted --repeat times and the median taken. XGBoost is timed with its DMatrix built inside the
measurement (a DMatrix predicted twice returns cached results) and with inplace_predict. Prints
one JSON line per (configuration, library): seconds, rows/s and tree walks/s (trees x rows / s),
the figure that carries over to an ensemble of many trees.
"""
import json
import os
import statistics
import sys
import time

from bench_common import ROOT, parse_args, realtime_prefix, run_json, write_lines

CONFIGS = {
    "small": {"num_leaves": 16, "learning_rate": 0.03, "feature_fraction": 0.6, "lambda_l2": 1,
              "min_data_in_leaf": 30, "num_iterations": 800},
    "ff": {"num_leaves": 64, "learning_rate": 0.03, "feature_fraction": 0.7,
           "num_iterations": 250},
    "large": {"num_leaves": 128, "learning_rate": 0.03, "feature_fraction": 0.9,
              "min_data_in_leaf": 3, "num_iterations": 250},
}


def median_seconds(function, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def line(tool, version, config, trees, rows, seconds, threads, **extra):
    return {"tool": tool, "version": version, "config": config, "threads": threads, "rows": rows,
            "trees": trees, "predict_seconds": round(seconds, 5),
            "rows_per_second": round(rows / seconds), "tree_walks_per_second":
            round(trees * rows / seconds), **extra}


def main():
    args = parse_args("unused")
    import lightgbm
    import pandas
    import xgboost

    threads = int(os.environ.get("PREDICT_THREADS", "2"))
    datasets = os.path.join(ROOT, "..", "shared", "datasets")
    train_path = os.path.join(datasets, "adult_train.csv.gz")
    test_path = os.path.join(datasets, "adult_test.csv.gz")
    train = pandas.read_csv(train_path)
    test = pandas.read_csv(test_path)
    y_train = (train.pop("class") == ">50K").astype(int).values
    test.pop("class")
    for column in train.columns:
        if not pandas.api.types.is_numeric_dtype(train[column]):
            categories = pandas.CategoricalDtype(sorted(train[column].dropna().unique()))
            train[column] = train[column].astype(categories)
            test[column] = test[column].astype(categories)
    rows = len(test)
    bench = os.path.join(args.build, "bench", "gbm_bench")
    lines = []

    def emit(record):
        lines.append(record)
        print(json.dumps(record), flush=True)

    for name, config in CONFIGS.items():
        rounds = config["num_iterations"]
        seconds = []
        for _ in range(args.repeat):
            ours = run_json(realtime_prefix() + [
                bench, "--train", train_path, "--test", test_path, "--label", "class",
                "--threads", str(threads), "--params", json.dumps(config)])
            seconds.append(ours["predict_seconds"])
        emit(line("tabforge", "", name, ours["rounds"], rows, statistics.median(seconds), threads,
                  roc_auc=ours["roc_auc"]))

        params = {"objective": "binary", "num_leaves": config["num_leaves"],
                  "learning_rate": config["learning_rate"],
                  "feature_fraction": config.get("feature_fraction", 1.0),
                  "lambda_l2": config.get("lambda_l2", 0.0),
                  "min_data_in_leaf": config.get("min_data_in_leaf", 20),
                  "num_threads": threads, "verbose": -1, "max_bin": 255}
        booster = lightgbm.train(params, lightgbm.Dataset(train, y_train), num_boost_round=rounds)
        emit(line("lightgbm", lightgbm.__version__, name, booster.num_trees(), rows,
                  median_seconds(lambda: booster.predict(test, num_threads=threads), args.repeat),
                  threads))

        model = xgboost.XGBClassifier(
            tree_method="hist", grow_policy="lossguide", max_leaves=config["num_leaves"],
            max_depth=0, learning_rate=config["learning_rate"], n_estimators=rounds,
            colsample_bytree=config.get("feature_fraction", 1.0),
            reg_lambda=config.get("lambda_l2", 0.0), max_bin=255, enable_categorical=True,
            n_jobs=threads)
        model.fit(train, y_train)
        xgb = model.get_booster()
        xgb.set_param({"nthread": threads})

        def with_matrix():
            xgb.predict(xgboost.DMatrix(test, enable_categorical=True, nthread=threads))

        emit(line("xgboost", xgboost.__version__, name, rounds, rows,
                  median_seconds(with_matrix, args.repeat), threads, input="DMatrix"))
        emit(line("xgboost", xgboost.__version__, name, rounds, rows,
                  median_seconds(lambda: xgb.inplace_predict(test), args.repeat), threads,
                  input="inplace_predict"))
    write_lines(args.out, lines)


if __name__ == "__main__":
    sys.exit(main())
