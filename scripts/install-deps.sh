#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages tabforge needs to build, test and benchmark. Packages
# already present are left alone; nothing is installed when all are there.
#   scripts/install-deps.sh          build and test dependencies
#   scripts/install-deps.sh --bench  also the peers the benchmarks compare against
set -euo pipefail

packages=(
  build-essential cmake make pkg-config git ca-certificates
  libcli11-dev nlohmann-json3-dev libfmt-dev libfast-float-dev
  zlib1g-dev libcurl4-openssl-dev libeigen3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
if [ "${1:-}" = "--bench" ]; then
  packages+=(python3 python3-pandas python3-sklearn)
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: apt-get not found; install these packages by hand: ${missing[*]}" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "install-deps: run as root (or install sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
