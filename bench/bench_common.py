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
