#!/usr/bin/env python3
"""Two family_bench binaries timed in alternated pairs (A then B, B then A, ...), for changes
of a few percent on a noisy machine: prints each binary's median fit seconds, the median of the
per-pair ratios B/A and the ratios, as one JSON line.

    python3 bench/ab_pairs.py A_BINARY B_BINARY [--dataset adult|california|letter]
        [--family XT] [--params JSON] [--threads 2] [--pairs 8]

The datasets come from TABFORGE_DATASETS_DIR (default ../shared/datasets); both binaries must
give the same model (checked by its hash).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from bench_common import ROOT, realtime_prefix

DATASETS = {
    "adult": ["--train", "adult_train.csv.gz", "--test", "adult_test.csv.gz", "--label", "class"],
    "california": ["--data", "california_housing.csv.gz", "--label", "median_house_value"],
    "letter": ["--data", "letter.csv.gz", "--label", "lettr"],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="adult")
    parser.add_argument("--family", default="XT")
    parser.add_argument("--params", default='{"bootstrap": false}')
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=8)
    args = parser.parse_args()
    folder = os.environ.get("TABFORGE_DATASETS_DIR") or os.path.join(ROOT, "..", "shared",
                                                                      "datasets")
    data = [os.path.join(folder, item) if item.endswith(".gz") else item
            for item in DATASETS[args.dataset]]
    prefix = realtime_prefix()

    def fit(binary):
        command = prefix + [binary, "--family", args.family, "--params", args.params,
                            "--threads", str(args.threads), "--predict-repeats", "1"] + data
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        line = json.loads(done.stdout.strip().splitlines()[-1])
        return line["fit_seconds"], line["model_sha256"]

    binaries = {"a": args.a, "b": args.b}
    times = {"a": [], "b": []}
    hashes = set()
    ratios = []
    for pair in range(args.pairs):
        order = ["a", "b"] if pair % 2 == 0 else ["b", "a"]
        seconds = {}
        for name in order:
            seconds[name], model = fit(binaries[name])
            hashes.add(model)
            times[name].append(seconds[name])
        ratios.append(seconds["b"] / seconds["a"])
    if len(hashes) != 1:
        sys.exit(f"the binaries gave different models: {sorted(hashes)}")
    print(json.dumps({
        "dataset": args.dataset, "family": args.family, "params": args.params,
        "threads": args.threads, "model_sha256": hashes.pop()[:12],
        "a_median_seconds": round(statistics.median(times["a"]), 4),
        "b_median_seconds": round(statistics.median(times["b"]), 4),
        "median_ratio_b_over_a": round(statistics.median(ratios), 4),
        "ratios": sorted(round(ratio, 4) for ratio in ratios)}))


if __name__ == "__main__":
    main()
