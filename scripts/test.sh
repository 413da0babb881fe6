#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite; arguments go to pytest
# (e.g. `bash scripts/test.sh -m "not slow"` for the fast subset).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/python.sh
"$PY" -m pytest "$@"
