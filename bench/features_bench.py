#!/usr/bin/env python3
"""Feature pipeline: tabforge (1 thread and all threads) beside an equivalent pandas/scikit-learn
pipeline in the same run, on Adult train and diabetes_130us (and titanic, which has text).

    python3 bench/features_bench.py [--build build/release] [--repeat 5] [--out FILE.jsonl]

The peer is a ColumnTransformer of SimpleImputer + OrdinalEncoder (unknown categories to -1)
for string columns, SimpleImputer for numeric ones and CountVectorizer(min_df=30,
ngram_range=(1, 3), max_features=10000) for text columns, the same columns tabforge treats as
text. Both sides start from a table already in memory; reading is not timed.
Run with Debian's python3 (python3-pandas, python3-sklearn).
"""
import json
import os
import sys

from bench_common import ROOT, parse_args, realtime_prefix, run_json, write_lines

PEER = r"""
import json, resource, sys, time
import numpy, pandas, sklearn
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder
path, label, repeat, text = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
text_columns = [c for c in text.split(",") if c]
frame = pandas.read_csv(path).drop(columns=[label])
strings = [c for c in frame.columns if frame[c].dtype == object and c not in text_columns]
numbers = [c for c in frame.columns if frame[c].dtype != object]
parts = [("num", SimpleImputer(strategy="median"), numbers),
         ("cat", make_pipeline(SimpleImputer(strategy="constant", fill_value="__missing__"),
                               OrdinalEncoder(handle_unknown="use_encoded_value",
                                              unknown_value=-1)), strings)]
for column in text_columns:
    frame[column] = frame[column].fillna("")
    parts.append((column, CountVectorizer(min_df=30, ngram_range=(1, 3), max_features=10000),
                  column))
fits, transforms = [], []
for _ in range(repeat):
    pipeline = ColumnTransformer(parts)
    start = time.perf_counter()
    pipeline.fit(frame)
    fits.append(time.perf_counter() - start)
    start = time.perf_counter()
    pipeline.transform(frame)
    transforms.append(time.perf_counter() - start)
median = lambda v: sorted(v)[len(v) // 2]
rows = len(frame)
print(json.dumps({"tool": "sklearn", "version": sklearn.__version__, "file": path, "rows": rows,
                  "threads": 1, "fit_seconds": round(median(fits), 4),
                  "transform_seconds": round(median(transforms), 4),
                  "transform_rows_per_s": round(rows / median(transforms)),
                  "fit_transform_rows_per_s": round(rows / (median(fits) + median(transforms))),
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

CASES = [("adult_train.csv.gz", "class", ""),
         ("diabetes_130us.csv.gz", "readmitted", ""),
         ("titanic.csv.gz", "survived", "name")]



def main():
    args = parse_args("interpreter with pandas and scikit-learn (Debian's)")
    bench = os.path.join(args.build, "bench", "features_bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"features_bench not found at {bench}; build first (make build)")
    datasets = os.path.join(ROOT, "..", "shared", "datasets")
    prefix = realtime_prefix()
    threads_all = os.cpu_count() or 1
    lines, summary = [], {"summary": True, "cpu_count": threads_all}
    for file_name, label, text in CASES:
        path = os.path.abspath(os.path.join(datasets, file_name))
        if not os.path.exists(path):
            continue
        ours = {}
        for threads in sorted({1, threads_all}):
            ours[threads] = run_json(prefix + [bench, path, "--label", label, "--threads",
                                               str(threads), "--repeat", str(args.repeat)])
            lines.append(ours[threads])
            print(json.dumps(ours[threads]), flush=True)
        peer = run_json(prefix + [args.python, "-c", PEER, path, label, str(args.repeat), text])
        lines.append(peer)
        print(json.dumps(peer), flush=True)
        summary[file_name.split(".")[0]] = {
            "transform_speedup_all_threads":
                round(peer["transform_seconds"] / ours[threads_all]["transform_seconds"], 2),
            "transform_speedup_1_thread":
                round(peer["transform_seconds"] / ours[1]["transform_seconds"], 2),
            "fit_transform_speedup_all_threads":
                round((peer["fit_seconds"] + peer["transform_seconds"]) /
                      (ours[threads_all]["fit_seconds"] + ours[threads_all]["transform_seconds"]),
                      2),
        }
    print(json.dumps(summary))
    write_lines(args.out, lines + [summary])


if __name__ == "__main__":
    main()
