#!/usr/bin/env python3
"""GBM on letter (multiclass) and california_housing (regression): tabforge's gbm_bench beside
XGBoost (hist, lossguide) and LightGBM with equivalent settings, in the same run, on the same
80/20 split (gbm_bench --data: row r is a test row when tabforge's RandomUniform(0, "test", r)
< 0.2, reproduced here).

    python3 bench/gbm_peers_split.py [--build build/release]     (GBM_THREADS, default 2)

Environment: GBM_DATASETS (comma-separated keys of DATASETS, default letter,california),
GBM_ROUNDS (default 100), GBM_MERGE_AB=1 (tabforge also with merge_equal_rows "never").

Settings: 100 rounds, learning rate 0.1, 31 leaves, 255 bins, no L2, min hessian 1e-3.
Categorical columns are native categoricals for every library. Prints one JSON line per run.
"""
import json
import os
import sys
import time

from bench_common import ROOT, parse_args, realtime_prefix, run_json, split_mask

DATASETS = {"letter": ("letter.csv.gz", "lettr", "multiclass"),
            "california": ("california_housing.csv.gz", "median_house_value", "regression"),
            "kddcup": ("kddcup99_10pct.csv.gz", "label", "multiclass")}
ROUNDS = int(os.environ.get("GBM_ROUNDS", "100"))
LEAVES, RATE = 31, 0.1


def main():
    args = parse_args("unused")
    import lightgbm
    import numpy
    import pandas
    import xgboost
    from sklearn.metrics import accuracy_score, log_loss, mean_squared_error

    threads = int(os.environ.get("GBM_THREADS", "2"))
    bench = os.path.join(args.build, "bench", "gbm_bench")
    folder = os.path.join(ROOT, "..", "shared", "datasets")
    keys = os.environ.get("GBM_DATASETS", "letter,california").split(",")
    merges = ["auto", "never"] if os.environ.get("GBM_MERGE_AB") == "1" else ["auto"]
    for file, label, kind in (DATASETS[key] for key in keys):
        path = os.path.join(folder, file)
        for merge in merges:
            params = {"num_iterations": ROUNDS, "learning_rate": RATE, "num_leaves": LEAVES,
                      "merge_equal_rows": merge}
            ours = run_json(realtime_prefix() + [bench, "--data", path, "--label", label,
                                                 "--threads", str(threads), "--params",
                                                 json.dumps(params)])
            ours.update({"tool": "tabforge", "dataset": file})
            print(json.dumps(ours), flush=True)

        table = pandas.read_csv(path)
        test = numpy.array(split_mask(len(table)))
        y = table.pop(label)
        for column in table.columns:
            if not pandas.api.types.is_numeric_dtype(table[column]):
                table[column] = table[column].astype(
                    pandas.CategoricalDtype(sorted(table[column].dropna().unique())))
        if kind == "multiclass":
            classes = sorted(y[~test].unique())
            y = y.map({name: index for index, name in enumerate(classes)}).values
        else:
            y = y.values
        x_train, x_test, y_train, y_test = table[~test], table[test], y[~test], y[test]

        def score(predicted):
            if kind == "multiclass":
                return {"accuracy": round(accuracy_score(y_test, predicted.argmax(axis=1)), 6),
                        "log_loss": round(log_loss(y_test, predicted, labels=range(len(classes))), 6)}
            return {"root_mean_squared_error":
                    round(float(numpy.sqrt(mean_squared_error(y_test, predicted))), 6)}

        if kind == "multiclass":
            model = xgboost.XGBClassifier(objective="multi:softprob")
        else:
            model = xgboost.XGBRegressor(objective="reg:squarederror")
        model.set_params(tree_method="hist", grow_policy="lossguide", max_leaves=LEAVES,
                         max_depth=0, learning_rate=RATE, n_estimators=ROUNDS, max_bin=255,
                         min_child_weight=1e-3, reg_lambda=0, enable_categorical=True,
                         n_jobs=threads)
        start = time.perf_counter()
        model.fit(x_train, y_train, verbose=False)
        seconds = time.perf_counter() - start
        predicted = model.predict_proba(x_test) if kind == "multiclass" else model.predict(x_test)
        print(json.dumps({"tool": "xgboost", "version": xgboost.__version__, "dataset": file,
                          "threads": threads, "train_seconds": round(seconds, 4),
                          **score(predicted)}), flush=True)

        lgb_params = {"objective": "multiclass" if kind == "multiclass" else "regression",
                      "learning_rate": RATE, "num_leaves": LEAVES, "max_bin": 255,
                      "num_threads": threads, "verbose": -1}
        if kind == "multiclass":
            lgb_params["num_class"] = len(classes)
        start = time.perf_counter()
        booster = lightgbm.train(lgb_params, lightgbm.Dataset(x_train, y_train),
                                 num_boost_round=ROUNDS)
        seconds = time.perf_counter() - start
        print(json.dumps({"tool": "lightgbm", "version": lightgbm.__version__, "dataset": file,
                          "threads": threads, "train_seconds": round(seconds, 4),
                          **score(booster.predict(x_test))}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
