#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite; arguments go to pytest
# (e.g. `bash scripts/test.sh -m "not slow"` for the fast subset).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/python.sh
# Keep the compiled test modules (__pycache__, ignored by git) from run to run, even where the environment asks Python
# not to: pytest's rewritten test modules are then read back instead of rewritten, which takes every worker 10 s or more.
unset PYTHONDONTWRITEBYTECODE
"$PY" -m pytest "$@"
