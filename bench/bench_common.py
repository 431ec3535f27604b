"""Pieces shared by the benchmark drivers in bench/."""
import argparse
import json
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def realtime_prefix():
    """chrt -f 1 steadies timings on a shared machine when we may use it."""
    if shutil.which("chrt") and subprocess.run(["chrt", "-f", "1", "true"]).returncode == 0:
        return ["chrt", "-f", "1"]
    return []


def run_json(command):
    """Runs a measurement in its own process and returns the JSON line it printed last."""
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def parse_args(description_python):
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--python", default="/usr/bin/python3", help=description_python)
    parser.add_argument("--out", help="also write every JSON line to this file")
    return parser.parse_args()


def write_lines(path, lines):
    if path:
        with open(path, "w") as out:
            for line in lines:
                out.write(json.dumps(line) + "\n")


MASK = (1 << 64) - 1


def mix64(value):
    """tabforge's counter-based generator (core/random.h), so peers see the same splits."""
    value = (value + 0x9E3779B97F4A7C15) & MASK
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & MASK
    return value ^ (value >> 31)


def uniform(seed, stream, counter):
    return (mix64(mix64(seed ^ mix64(stream)) ^ counter) >> 11) * 2.0 ** -53


def split_mask(rows, fraction=0.2, seed=0):
    """gbm_bench --data's test rows: RandomUniform(seed, "test", row) < fraction."""
    key = mix64(seed ^ mix64(0x74657374))
    return [((mix64(key ^ row) >> 11) * 2.0 ** -53) < fraction for row in range(rows)]
