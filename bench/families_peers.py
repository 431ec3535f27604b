#!/usr/bin/env python3
"""RF, XT, KNN and LR: tabforge's family_bench beside scikit-learn's estimators with the same
settings, in the same run, on Adult (its train/test files), letter and california_housing (the
family_bench --data 80/20 split, reproduced by bench_common.split_mask).

    python3 bench/families_peers.py [--build build/release] [--repeat 5] [--out FILE.json]
        [--datasets adult,letter,california] [--families RF,XT,KNN,LR,LR_L1] [--seed N]
        (FAMILY_THREADS, default 2; TABFORGE_DATASETS_DIR, default ../shared/datasets)

Trees get ordinal-encoded categoricals; KNN standardised numerics only; LR (LogisticRegression or
Ridge; LR_L1: LogisticRegression with penalty l1 by saga, or Lasso) standardised numerics plus
one-hot categoricals. Prints one JSON line per run (median
seconds over --repeat runs, the last run's metrics) and a summary line per dataset and family;
KNN is timed as fit plus predict.
"""
import argparse
import json
import os
import statistics
import sys
import time
import warnings

from bench_common import ROOT, parse_args, realtime_prefix, run_json, split_mask, write_lines

# name: (file or (train file, test file), label, kind)
DATASETS = {
    "adult": (("adult_train.csv.gz", "adult_test.csv.gz"), "class", "binary"),
    "letter": ("letter.csv.gz", "lettr", "multiclass"),
    "california": ("california_housing.csv.gz", "median_house_value", "regression"),
}
# name: tabforge parameters; a name's part before "_" is the family key (LR_L1: LR with L1).
# XT without bootstrap: scikit-learn's ExtraTrees default (tabforge's, as AutoGluon's, bootstraps).
FAMILIES = {"RF": {}, "XT": {"bootstrap": False}, "KNN": {"n_neighbors": 10}, "LR": {}, "LR_L1": {"penalty": "l1"}}
POSITIVE = ">50K"
SUMMARY_METRIC = {"binary": "roc_auc", "multiclass": "accuracy", "regression": "r2"}
MISSING = "__missing__"


def parse_options():
    """bench_common's options (--build, --repeat, --python, --out) plus --datasets, --families
    and --seed (the forests' random_state on both sides)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help="comma list among " + ",".join(DATASETS))
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="comma list among " + ",".join(FAMILIES))
    parser.add_argument("--seed", type=int, default=0,
                        help="RF and XT random_state, tabforge's and scikit-learn's")
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        print(parser.format_help())
    ours, rest = parser.parse_known_args()
    sys.argv[1:] = rest
    args = parse_args("unused")
    for option, known in (("datasets", DATASETS), ("families", FAMILIES)):
        chosen = [name.strip() for name in getattr(ours, option).split(",") if name.strip()]
        if not chosen or any(name not in known for name in chosen):
            parser.error(f"--{option} {getattr(ours, option)}: choose among {','.join(known)}")
        setattr(args, option, chosen)
    args.seed = ours.seed
    return args


def median(values):
    return round(statistics.median(values), 4)


def main():
    args = parse_options()
    import numpy
    import pandas
    import sklearn
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor,
                                  RandomForestClassifier, RandomForestRegressor)
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import Lasso, LogisticRegression, Ridge
    from sklearn.metrics import (accuracy_score, log_loss, mean_squared_error, r2_score,
                                 roc_auc_score)
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
    from threadpoolctl import threadpool_limits

    warnings.filterwarnings("ignore", category=ConvergenceWarning)  # iterations are reported
    threads = int(os.environ.get("FAMILY_THREADS", "2"))
    bench = os.path.join(args.build, "bench", "family_bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"family_bench not found at {bench}; build first (make build)")
    folder = os.environ.get("TABFORGE_DATASETS_DIR") or os.path.join(ROOT, "..", "shared",
                                                                      "datasets")
    prefix = realtime_prefix()
    version = tuple(int(part) for part in sklearn.__version__.split(".")[:2])
    # Missing numeric values reach the trees as NaN where scikit-learn supports it.
    nan_ok = {"RF": version >= (1, 4), "XT": version >= (1, 6)}
    lines = []

    def emit(line):
        lines.append(line)
        print(json.dumps(line), flush=True)

    for name in args.datasets:
        files, label, kind = DATASETS[name]
        if isinstance(files, tuple):
            train_path, test_path = (os.path.join(folder, file) for file in files)
            data_args = ["--train", train_path, "--test", test_path, "--label", label]
            train = pandas.read_csv(train_path)
            test = pandas.read_csv(test_path)
            test[label] = test[label].str.rstrip(".")  # Adult's test labels may end in '.'
            dataset = files[0]
        else:
            path = os.path.join(folder, files)
            data_args = ["--data", path, "--label", label]
            table = pandas.read_csv(path)
            in_test = numpy.array(split_mask(len(table)))
            train = table[~in_test].reset_index(drop=True)
            test = table[in_test].reset_index(drop=True)
            dataset = files
        y_train, y_test = train.pop(label), test.pop(label)
        if kind == "regression":
            y_train, y_test = y_train.to_numpy(float), y_test.to_numpy(float)
        else:
            classes = sorted(y_train.astype(str).unique())  # tabforge's order: sorted strings
            index = {text: at for at, text in enumerate(classes)}
            y_train = y_train.astype(str).map(index).to_numpy()
            y_test = y_test.astype(str).map(index).to_numpy()
        numeric = [c for c in train.columns if pandas.api.types.is_numeric_dtype(train[c])]
        categorical = [c for c in train.columns if c not in numeric]
        # Categorical columns as ordinal codes, outside the timings (tabforge's feature pipeline
        # is too); missing values are a category of their own, unknown test values -1.
        codes_train = numpy.empty((len(train), 0))
        codes_test = numpy.empty((len(test), 0))
        if categorical:
            encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)
            codes_train = encoder.fit_transform(train[categorical].astype(object).fillna(MISSING))
            codes_test = encoder.transform(test[categorical].astype(object).fillna(MISSING))
        numeric_train = train[numeric].to_numpy(float)
        numeric_test = test[numeric].to_numpy(float)
        x_train = numpy.hstack([numeric_train, codes_train])
        x_test = numpy.hstack([numeric_test, codes_test])
        numeric_at = list(range(len(numeric)))
        categorical_at = list(range(len(numeric), len(numeric) + len(categorical)))

        def score(predicted, classes_order):
            """Metrics of predictions (probability columns for the classes in classes_order)."""
            if kind == "regression":
                return {"root_mean_squared_error":
                        round(float(numpy.sqrt(mean_squared_error(y_test, predicted))), 6),
                        "r2": round(float(r2_score(y_test, predicted)), 6)}
            proba = numpy.zeros((len(y_test), len(classes)))
            proba[:, classes_order] = predicted
            result = {}
            if kind == "binary":
                positive = classes.index(POSITIVE)
                result["roc_auc"] = round(float(roc_auc_score(y_test == positive,
                                                              proba[:, positive])), 6)
            result["accuracy"] = round(float(accuracy_score(y_test, proba.argmax(axis=1))), 6)
            result["log_loss"] = round(float(log_loss(y_test, proba,
                                                      labels=range(len(classes)))), 6)
            return result

        def peer(family):
            """The scikit-learn model for `family` and its training and test inputs."""
            classification = kind != "regression"
            if family in ("RF", "XT"):
                if classification:
                    model = (RandomForestClassifier if family == "RF" else ExtraTreesClassifier)()
                else:
                    model = (RandomForestRegressor if family == "RF" else ExtraTreesRegressor)()
                model.set_params(n_estimators=300, max_leaf_nodes=15000, min_samples_leaf=1,
                                 max_features="sqrt" if classification else 1.0,
                                 bootstrap=family == "RF", n_jobs=threads,
                                 random_state=args.seed)
                if nan_ok[family]:
                    return model, x_train, x_test
                medians = numpy.nan_to_num(numpy.nanmedian(numeric_train, axis=0))
                fit_x, test_x = x_train.copy(), x_test.copy()
                for x in (fit_x, test_x):
                    for at in numeric_at:
                        x[numpy.isnan(x[:, at]), at] = medians[at]
                return model, fit_x, test_x
            scale = make_pipeline(SimpleImputer(strategy="mean"), StandardScaler())
            if family == "KNN":
                estimator = (KNeighborsClassifier if classification else KNeighborsRegressor)(
                    n_neighbors=10, n_jobs=threads)
                return make_pipeline(scale, estimator), numeric_train, numeric_test
            if family == "LR_L1":
                estimator = (LogisticRegression(penalty="l1", C=1, max_iter=100, solver="saga")
                             if classification else Lasso(alpha=1))
            else:
                estimator = (LogisticRegression(C=1, max_iter=100, solver="lbfgs")
                             if classification else Ridge(alpha=1))
            columns = [("numeric", scale, numeric_at)]
            if categorical:
                columns.append(("categorical",
                                OneHotEncoder(handle_unknown="ignore", max_categories=32),
                                categorical_at))
            return make_pipeline(ColumnTransformer(columns), estimator), x_train, x_test

        for family in args.families:
            params = dict(FAMILIES[family])
            if family in ("RF", "XT") and args.seed != 0:
                params["random_state"] = args.seed
            command = prefix + [bench, "--family", family.split("_")[0], "--params",
                                json.dumps(params),
                                "--threads", str(threads)] + data_args
            runs = [run_json(command) for _ in range(args.repeat)]
            ours = dict(runs[-1])
            fits = [run["fit_seconds"] for run in runs]
            ours.update({"tool": "tabforge", "dataset": dataset, "fit_seconds": median(fits),
                         "predict_seconds": median([run["predict_seconds"] for run in runs]),
                         "fit_predict_seconds": median([run["fit_seconds"] + run["predict_seconds"]
                                                        for run in runs]),
                         "fit_seconds_runs": fits})
            emit(ours)

            fits, predicts = [], []
            with threadpool_limits(threads):  # BLAS and OpenMP threads, as tabforge's --threads
                for _ in range(args.repeat):
                    model, fit_x, test_x = peer(family)
                    start = time.perf_counter()
                    model.fit(fit_x, y_train)
                    fits.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    predicted = (model.predict(test_x) if kind == "regression"
                                 else model.predict_proba(test_x))
                    predicts.append(time.perf_counter() - start)
            estimator = model[-1] if hasattr(model, "steps") else model
            order = None if kind == "regression" else list(model.classes_)
            theirs = {"tool": "scikit-learn", "version": sklearn.__version__, "family": family,
                      "estimator": type(estimator).__name__, "dataset": dataset,
                      "rows": len(y_train), "test_rows": len(y_test), "params": params,
                      "threads": threads, **score(predicted, order),
                      "fit_seconds": median(fits), "predict_seconds": median(predicts),
                      "fit_predict_seconds": median([f + p for f, p in zip(fits, predicts)]),
                      "fit_seconds_runs": [round(seconds, 4) for seconds in fits]}
            if getattr(estimator, "n_iter_", None) is not None:
                theirs["iterations"] = int(numpy.max(estimator.n_iter_))
            emit(theirs)

            metric = SUMMARY_METRIC[kind]
            timed = "fit_predict_seconds" if family == "KNN" else "fit_seconds"
            emit({"summary": True, "dataset": dataset, "family": family, "metric": metric,
                  "tabforge_metric": ours[metric], "sklearn_metric": theirs[metric],
                  "timed": timed, "fit_ratio": round(ours[timed] / theirs[timed], 4)})
    write_lines(args.out, lines)


if __name__ == "__main__":
    sys.exit(main())
