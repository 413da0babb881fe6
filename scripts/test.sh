#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite; arguments go to pytest
# (e.g. `bash scripts/test.sh -m "not slow"` for the fast subset).
#
# tests/langchain runs in the environment of the langchain extra (.venv-langchain, or DYNSTEER_LANGCHAIN_VENV),
# where ToolSandbox is not; everything else in the main one. Test paths given go to the environment they belong
# to; without any, each environment runs all of its tests. The exit status is the worse of the two runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/python.sh
# Keep the compiled test modules (__pycache__, ignored by git) from run to run, even where the environment asks Python
# not to: pytest's rewritten test modules are then read back instead of rewritten, which takes every worker 10 s or more.
unset PYTHONDONTWRITEBYTECODE
LANGCHAIN_PY="${DYNSTEER_LANGCHAIN_VENV:-$PWD/.venv-langchain}/bin/python"

options=()
main_paths=()
langchain_paths=()
given=0
for arg in "$@"; do
    case "$arg" in
        tests/langchain|tests/langchain/*|./tests/langchain|./tests/langchain/*) langchain_paths+=("$arg"); given=1 ;;
        tests|tests/|./tests|./tests/) main_paths+=("$arg"); langchain_paths+=(tests/langchain); given=1 ;;
        tests/*|./tests/*) main_paths+=("$arg"); given=1 ;;
        *) options+=("$arg") ;;
    esac
done
if [ "$given" = 0 ]; then
    main_paths=(tests)
    langchain_paths=(tests/langchain)
fi

# pytest's 5 says no test was collected: right for one environment when the options select tests of the other alone.
status=0
ran=0
run() {
    local rc=0
    "$@" || rc=$?
    if [ "$rc" = 5 ]; then return 0; fi
    ran=1
    if [ "$rc" -gt "$status" ]; then status=$rc; fi
}
if [ "${#main_paths[@]}" -gt 0 ]; then
    run "$PY" -m pytest --ignore=tests/langchain ${options[@]+"${options[@]}"} "${main_paths[@]}"
fi
if [ "${#langchain_paths[@]}" -gt 0 ]; then
    run "$LANGCHAIN_PY" -m pytest ${options[@]+"${options[@]}"} "${langchain_paths[@]}"
fi
if [ "$ran" = 0 ]; then
    echo "test: no test was collected in either environment" >&2
    exit 5
fi
exit "$status"
