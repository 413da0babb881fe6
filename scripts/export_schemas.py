"""Write the committed JSON Schemas from the code that defines them.

    python scripts/export_schemas.py          # write blueprints/schema.json, dynsteer_hook/data/events.schema.json
                                              # and dynsteer_hook/data/report.schema.json
    python scripts/export_schemas.py --check  # exit 1 if a committed file differs from the code

tests/test_schemas.py runs the check, so the files cannot drift from the models.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dynsteer_hook.model.blueprint import blueprint_json_schema
from dynsteer_hook.model.events import event_record_schema
from dynsteer_hook.model.records import Report

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {
    "blueprints/schema.json": blueprint_json_schema,
    "dynsteer_hook/data/events.schema.json": event_record_schema,
    "dynsteer_hook/data/report.schema.json": Report.model_json_schema,
}


def render(schema: dict[str, Any]) -> str:
    """Text of a schema file: what ``dynsteer schema blueprint|events`` prints."""
    return json.dumps(schema, indent=2) + "\n"


def rendered() -> dict[str, str]:
    """Path (relative to the repository root) -> the text the code generates for it."""
    return {path: render(make()) for path, make in TARGETS.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    stale = []
    for rel, text in rendered().items():
        path = ROOT / rel
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {rel}")
    if stale:
        print(f"stale schema file(s): {', '.join(stale)}; run python scripts/export_schemas.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
