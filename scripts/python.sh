# Sourced by setup.sh, test.sh and demo.sh: sets PY, the interpreter they install into and run.
#
#   PYTHON=/path/to/python   that interpreter (CI passes the one of its own virtual environment)
#   an active virtual env    its python
#   otherwise                .venv in the checkout, created once with the first Python 3.10-3.12 found
#                            (DYNSTEER_BASE_PYTHON=python3.12 picks the base interpreter)
_supported() { "$1" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 12))' >/dev/null 2>&1; }

if [ -n "${PYTHON:-}" ]; then
    PY="$PYTHON"
elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
    PY="$VIRTUAL_ENV/bin/python"
else
    if [ ! -x .venv/bin/python ]; then
        base=""
        for candidate in ${DYNSTEER_BASE_PYTHON:-} python3 python3.12 python3.11 python3.10; do
            if command -v "$candidate" >/dev/null 2>&1 && _supported "$candidate"; then base="$candidate"; break; fi
        done
        if [ -z "$base" ]; then
            echo "setup: no Python 3.10, 3.11 or 3.12 found; install one, or name it with DYNSTEER_BASE_PYTHON=/path/to/python3.11" >&2
            exit 1
        fi
        echo "setup: creating the virtual environment .venv with $("$base" --version 2>&1)"
        "$base" -m venv .venv
    fi
    PY="$PWD/.venv/bin/python"
fi
if ! _supported "$PY"; then
    echo "setup: $PY is $("$PY" --version 2>&1); dynsteer-hook needs Python 3.10, 3.11 or 3.12" >&2
    exit 1
fi
