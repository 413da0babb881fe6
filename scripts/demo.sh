#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job on its embedded default: real ToolSandbox
# scenarios played by the shipped scripted agents with dynsteer live in the loop. No API key.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/python.sh
"$PY" -m dynsteer_hook.cli demo "$@"
