#!/usr/bin/env python3
"""GBM speed on the synthetic HIGGS-like problem: tabforge beside LightGBM and XGBoost (hist,
lossguide) on exactly the same rows (gbm_bench --write-data), in the same run.

    python3 bench/gbm_peers_synthetic.py [--build build/release] [ROWS [ROUNDS]]

Settings as the GBM issue's speed bar: 255 leaves, 255 bins, learning rate 0.1, 2 threads
(GBM_THREADS); ROWS defaults to 1000000 and ROUNDS to 500. Prints one JSON line per library.
"""
import argparse
import json
import os
import tempfile
import time

from bench_common import realtime_prefix, run_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("rows", nargs="?", type=int, default=1000000)
    parser.add_argument("rounds", nargs="?", type=int, default=500)
    args = parser.parse_args()
    rows, rounds = args.rows, args.rounds
    threads = int(os.environ.get("GBM_THREADS", "2"))
    bench = os.path.join(args.build, "bench", "gbm_bench")
    import lightgbm
    import numpy
    import pandas
    import xgboost
    from sklearn.metrics import roc_auc_score

    with tempfile.TemporaryDirectory(prefix="tabforge_gbm_") as folder:
        params = {"num_iterations": rounds, "num_leaves": 255, "max_bin": 255, "learning_rate": 0.1}
        ours = run_json(realtime_prefix() + [bench, "--synthetic", f"{rows},28,0", "--write-data",
                                             folder, "--threads", str(threads), "--params",
                                             json.dumps(params)])
        ours["tool"] = "tabforge"
        print(json.dumps(ours), flush=True)
        train = pandas.read_csv(os.path.join(folder, "train.csv"), dtype=numpy.float32)
        test = pandas.read_csv(os.path.join(folder, "test.csv"), dtype=numpy.float32)
    y = train.pop("label").values
    y_test = test.pop("label").values
    start = time.perf_counter()
    data = lightgbm.Dataset(train.values, y, params={"max_bin": 255})
    data.construct()
    bin_seconds = time.perf_counter() - start
    start = time.perf_counter()
    booster = lightgbm.train({"objective": "binary", "num_leaves": 255, "learning_rate": 0.1,
                              "num_threads": threads, "verbose": -1}, data, num_boost_round=rounds)
    seconds = time.perf_counter() - start
    print(json.dumps({"tool": "lightgbm", "version": lightgbm.__version__, "rows": rows,
                      "rounds": rounds, "threads": threads, "bin_seconds": round(bin_seconds, 3),
                      "train_seconds": round(seconds, 3),
                      "roc_auc": round(roc_auc_score(y_test, booster.predict(test.values)), 6)}),
          flush=True)
    start = time.perf_counter()
    matrix = xgboost.QuantileDMatrix(train.values, y, max_bin=256, nthread=threads)
    bin_seconds = time.perf_counter() - start
    start = time.perf_counter()
    model = xgboost.train({"objective": "binary:logistic", "tree_method": "hist",
                           "grow_policy": "lossguide", "max_leaves": 255, "max_depth": 0,
                           "eta": 0.1, "max_bin": 256, "nthread": threads}, matrix,
                          num_boost_round=rounds)
    seconds = time.perf_counter() - start
    p = model.predict(xgboost.DMatrix(test.values, nthread=threads))
    print(json.dumps({"tool": "xgboost", "version": xgboost.__version__, "rows": rows,
                      "rounds": rounds, "threads": threads, "bin_seconds": round(bin_seconds, 3),
                      "train_seconds": round(seconds, 3), "roc_auc": round(roc_auc_score(y_test, p), 6)}),
          flush=True)


if __name__ == "__main__":
    main()
