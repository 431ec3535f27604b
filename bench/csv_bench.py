#!/usr/bin/env python3
"""CSV reading: tabforge (1 thread and all threads) beside pandas.read_csv, same files, same run.

    python3 bench/csv_bench.py [--build build/release] [--repeat 5] [--out FILE.json]

Reads ../shared/datasets/adult_train.csv.gz and a generated 1M-row x 30-column numeric CSV
(fixed seed, written under the system temporary folder, never into the repository). Every
measurement runs in its own process, so peak RSS is that reader's alone; each prints its
median over --repeat reads. Prints one JSON line per measurement and a summary line with the
ratios the foundation issue's bars are stated in.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from bench_common import ROOT, parse_args, realtime_prefix, run_json, write_lines

PANDAS_READ = r"""
import json, resource, sys, time
import pandas
path, repeat = sys.argv[1], int(sys.argv[2])
runs = []
for _ in range(repeat):
    start = time.perf_counter()
    frame = pandas.read_csv(path)
    runs.append(time.perf_counter() - start)
median = sorted(runs)[len(runs) // 2]
print(json.dumps({"tool": "pandas", "version": pandas.__version__, "file": path,
                  "rows": int(frame.shape[0]), "cols": int(frame.shape[1]),
                  "threads": 1, "seconds": round(median, 4),
                  "runs": [round(r, 4) for r in runs],
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""




def main():
    args = parse_args("interpreter with pandas (Debian's python3-pandas)")

    bench = os.path.join(args.build, "bench", "csv_bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"csv_bench not found at {bench}; build first (make build)")
    datasets = os.path.join(ROOT, "..", "shared", "datasets")
    workdir = tempfile.mkdtemp(prefix="tabforge_csv_bench_")
    numeric = os.path.join(workdir, "numeric_1m_x30.csv")
    subprocess.run([bench, "generate", "--rows", "1000000", "--cols", "30", "--seed", "42",
                    "-o", numeric], check=True)
    files = [numeric]
    adult = os.path.join(datasets, "adult_train.csv.gz")
    if os.path.exists(adult):
        files.insert(0, os.path.abspath(adult))

    prefix = realtime_prefix()
    threads_all = os.cpu_count() or 1
    lines = []
    try:
        for path in files:
            for threads in sorted({1, threads_all}):
                lines.append(run_json(prefix + [bench, "read", path, "--threads", str(threads),
                                                "--repeat", str(args.repeat)]))
                print(json.dumps(lines[-1]), flush=True)
            lines.append(run_json(prefix + [args.python, "-c", PANDAS_READ, path,
                                            str(args.repeat)]))
            lines[-1]["bytes"] = next(l["bytes"] for l in lines if l["file"] == path
                                      and l["tool"] == "tabforge")
            lines[-1]["mb_per_s"] = round(lines[-1]["bytes"] / 1e6 / lines[-1]["seconds"], 1)
            print(json.dumps(lines[-1]), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    summary = {"summary": True, "cpu_count": threads_all}
    for path in files:
        key = "numeric_1m" if path == numeric else "adult_train"
        ours = {l["threads"]: l for l in lines if l["file"] == path and l["tool"] == "tabforge"}
        pandas_line = next(l for l in lines if l["file"] == path and l["tool"] == "pandas")
        best = ours[threads_all]
        summary[key] = {
            "speedup_vs_pandas_all_threads": round(pandas_line["seconds"] / best["seconds"], 2),
            "speedup_vs_pandas_1_thread": round(pandas_line["seconds"] / ours[1]["seconds"], 2),
            "thread_scaling": round(ours[1]["seconds"] / best["seconds"], 2),
        }
        if path == numeric:
            bound = 1.5 * best["payload_bytes"] + best["bytes"]
            summary[key]["peak_rss_bytes"] = best["peak_rss_bytes"]
            summary[key]["rss_bound_bytes"] = int(bound)
            summary[key]["rss_within_bound"] = best["peak_rss_bytes"] <= bound
    print(json.dumps(summary))
    write_lines(args.out, lines + [summary])


if __name__ == "__main__":
    main()
