#!/usr/bin/env python3
"""GPU time per kernel of one run, from Nsight Compute, beside the run's wall-clock training time.

    python3 bench/cuda_kernel_times.py [--ncu ncu] [--top 15] -- PROGRAM [ARGS...]
    e.g. python3 bench/cuda_kernel_times.py -- device-pack/bin/gbm_bench --synthetic 1000000,28,0
             --device cuda --params '{"num_leaves":255,"num_iterations":3}'

Runs PROGRAM twice: once plainly (its last JSON line gives train_seconds, as gbm_bench and
family_bench print), once under `ncu --metrics gpu__time_duration.sum` (clocks left alone), and
prints one JSON line: the number of kernel launches, their summed GPU time, that time as a share
of train_seconds (what is left is launch gaps, host work and copies), and the kernels that took
the most time (name, launches, total and mean microseconds). ncu serialises the kernels, so the
sums are each kernel's own time, without overlap.

--launch-skip N --launch-count M profile only launches N to N + M - 1 (e.g. batches in the
middle of a GBM's training, whose trees differ from the first ones); the line then leaves out the
share of train_seconds and the bandwidth, which need every launch.

When the run reports device_histogram_bytes (gbm_bench with --device cuda: the bin cells, row
positions and gradient pairs its histogram builds read), the line also gives the histogram
kernels' effective bandwidth: those bytes over the summed time of the kernels whose names
contain "Histogram". Compare it with bench/copy_bandwidth's figure for the same device.
"""
import argparse
import collections
import csv
import io
import json
import shutil
import subprocess
import sys


def KernelName(full):
    """The kernel's name without its parameter list ("(anonymous namespace)" stays)."""
    if not full.endswith(")"):
        return full
    depth = 0
    for at in range(len(full) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(full[at], 0)
        if depth == 0:
            return full[:at]
    return full


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ncu", default=shutil.which("ncu") or "ncu")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--launch-skip", type=int, default=0)
    parser.add_argument("--launch-count", type=int, default=0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the program to profile after --")

    plain = subprocess.run(command, check=True, capture_output=True, text=True)
    lines = [line for line in plain.stdout.splitlines() if line.startswith("{")]
    report = json.loads(lines[-1]) if lines else {}
    train_seconds = report.get("train_seconds")
    histogram_bytes = report.get("device_histogram_bytes")

    window = args.launch_skip > 0 or args.launch_count > 0
    window_options = []
    if args.launch_skip > 0:
        window_options += ["--launch-skip", str(args.launch_skip)]
    if args.launch_count > 0:
        window_options += ["--launch-count", str(args.launch_count)]
    profiled = subprocess.run(
        [args.ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
         "--print-units", "base"] + window_options + command,
        capture_output=True, text=True)
    if profiled.returncode != 0:
        sys.exit(f"ncu failed ({profiled.returncode}): {profiled.stderr.strip()[-2000:]}")
    # The CSV starts at its header line; ncu's own messages ("==PROF==") and the program's
    # output come before it.
    text = profiled.stdout
    start = text.find('"ID","Process ID"')
    if start < 0:
        sys.exit("ncu printed no metric table; is the program launching kernels?")
    totals = collections.defaultdict(float)
    launches = collections.Counter()
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        seconds = value * {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3,
                           "ms": 1e-3, "second": 1.0, "s": 1.0}[unit]
        name = KernelName(row["Kernel Name"])
        totals[name] += seconds
        launches[name] += 1
    kernel_seconds = sum(totals.values())
    top = sorted(totals.items(), key=lambda item: -item[1])[: args.top]
    histogram_seconds = sum(seconds for name, seconds in totals.items()
                            if "histogram" in name.lower())
    extra = {}
    if histogram_bytes and histogram_seconds > 0 and not window:
        extra = {"histogram_bytes": histogram_bytes,
                 "histogram_kernel_seconds": round(histogram_seconds, 6),
                 "histogram_bytes_per_second": float(f"{histogram_bytes / histogram_seconds:.4g}")}
    print(json.dumps({
        "command": command,
        "train_seconds": train_seconds,
        "launches": sum(launches.values()),
        "kernel_seconds": round(kernel_seconds, 6),
        "kernel_share_of_train": round(kernel_seconds / train_seconds, 4)
        if train_seconds and not window else None,
        "launch_window": [args.launch_skip, args.launch_count] if window else None,
        "kernels": [{"name": name, "launches": launches[name],
                     "total_us": round(1e6 * seconds, 1),
                     "mean_us": round(1e6 * seconds / launches[name], 2)}
                    for name, seconds in top],
        **extra,
    }))


if __name__ == "__main__":
    sys.exit(main())
