"""Judge answers kept on disk, so a re-run of the same evaluation is reproducible and asks no model.

``CachedJudgeClient`` wraps the judges' ``LLMClient``: every JSON call is keyed by what
changes the answer (the model, the endpoint without secrets, the JSON mode, the temperature,
the answer limit, the messages, the output schema, and the sample index the judge gives: the
Tier 2 samples of one stage send the same prompt and must not collapse into one answer). A
known key is answered from its file with no call; an unknown one is asked and its answer
stored. The first run at a temperature above 0 fixes the samples it drew; every later run
sees exactly those.

Files: ``DIR/<2 hex>/<sha256>.json``, each a JSON object holding the answer's text, finish
reason and usage (tokens, cost: what the answer cost when it was asked), plus the key's
readable parts. Each is written to a temporary sibling and renamed into place, so concurrent
writers (worker processes, Ray tasks, several runs sharing a folder) never leave a partial
file: the last rename wins and every version is whole. A stored answer is data: it is only
ever read as JSON text and validated by the same rules as a fresh answer (never imported,
unpickled or evaluated). A file that is not such an object, or whose key differs, is ignored
with a warning, counted under ``corrupt``, and replaced by the fresh answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel

from dynsteer_hook.files.cache import read_entry
from dynsteer_hook.files.outputs import reason, temp_sibling
from dynsteer_hook.llm.client import LLMClient
from dynsteer_hook.llm.completion import Completion, JsonCompletion, Message, Usage
from dynsteer_hook.llm.output import parse_output
from dynsteer_hook.model.json_text import JsonTextError, loads, lone_surrogate

T = TypeVar("T", bound=BaseModel)

CACHE_VERSION = 1
"""Bumped when the key or the file layout changes: older files then simply miss."""
MAX_ENTRY_BYTES = 16 * 2**20
"""Largest entry read (an answer is some kilobytes): a larger file is no answer this cache wrote."""

# Through the standard library's logging: a program embedding the package sees its warnings only, unless it
# configures logging (the command line does, in logs.py).
_log = structlog.wrap_logger(logging.getLogger(__name__))


@dataclass
class CacheStats:
    """What one client's cache did: answers served from files, calls made and stored, files ignored."""

    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    unwritable: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "corrupt": self.corrupt, "unwritable": self.unwritable, "notes": self.notes[:5]}


def cache_key(parts: Mapping[str, Any]) -> str:
    """The SHA-256 of the key's parts as canonical JSON."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class CachedJudgeClient:
    """An ``LLMClient`` for the judges whose JSON answers are kept under ``folder``.

    Attributes:
        client: The client asked on a miss.
        folder: The cache folder (created on the first write).
        stats: Hits, misses and ignored files so far (this process).
    """

    client: LLMClient
    folder: Path
    stats: CacheStats = field(default_factory=CacheStats)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def endpoint(self) -> str | None:
        return self.client.endpoint

    def key_parts(self, messages: Sequence[Message], output: type[BaseModel], temperature: float | None,
                  max_tokens: int | None, sample: int) -> dict[str, Any]:
        """Everything that changes the answer, as a JSON-able mapping."""
        return {
            "version": CACHE_VERSION,
            "model": self.client.model,
            "endpoint": self.client.endpoint,
            "json_mode": self.client.json_mode,
            "temperature": self.client.temperature if temperature is None else temperature,
            "max_tokens": self.client.max_tokens if max_tokens is None else max_tokens,
            "output": output.model_json_schema(),
            "messages": [dict(m) for m in messages],
            "sample": sample,
        }

    def path_of(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def complete_json(self, messages: Sequence[Message], output: type[T], *, temperature: float | None = None,
                      max_tokens: int | None = None, sample: int = 0) -> JsonCompletion[T]:
        """The stored answer for this call when there is a whole one, else the client's (then stored).

        Raises:
            LLMUsageError, LLMUnavailableError: As ``LLMClient.complete_json`` on a miss (failures are not stored).
        """
        key = cache_key(self.key_parts(messages, output, temperature, max_tokens, sample))
        path = self.path_of(key)
        stored = self._read(path, key)
        if stored is not None:
            with self._lock:
                self.stats.hits += 1
            completion = Completion(text=stored["text"], model=self.client.model, usage=Usage(**stored["usage"]), attempts=0,
                                    seconds=0.0, finish_reason=stored["finish_reason"], notes=("answered from the judge cache",))
            parsed = parse_output(completion.text, output, truncated=completion.truncated)
            return JsonCompletion(completion, parsed.value, parsed.rule, parsed.error)
        reply = self.client.complete_json(messages, output, temperature=temperature, max_tokens=max_tokens)
        with self._lock:
            self.stats.misses += 1
        self._write(path, key, sample, reply.completion)
        return reply

    def _note(self, kind: str, text: str) -> None:
        with self._lock:
            setattr(self.stats, kind, getattr(self.stats, kind) + 1)
            if len(self.stats.notes) < 20:
                self.stats.notes.append(text)
        _log.warning(f"judge_cache.{kind}", note=text)

    def _read(self, path: Path, key: str) -> dict[str, Any] | None:
        try:
            raw, _ = read_entry(path, MAX_ENTRY_BYTES)  # never a link, a pipe or /dev/zero: those would hang or never end
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._note("corrupt", f"judge cache file {path} cannot be read ({reason(exc)}); asked the model again")
            return None
        try:
            data = loads(raw)
            usage = data["usage"]
            ok = (data.get("key") == key and isinstance(data.get("text"), str)
                  and "finish_reason" in data and (data["finish_reason"] is None or isinstance(data["finish_reason"], str))
                  and isinstance(usage, dict) and set(usage) == {"prompt_tokens", "completion_tokens", "cost_usd", "cost_known"}
                  and all(isinstance(usage[k], int) and not isinstance(usage[k], bool) and usage[k] >= 0 for k in ("prompt_tokens", "completion_tokens"))
                  and isinstance(usage["cost_usd"], int | float) and not isinstance(usage["cost_usd"], bool) and math.isfinite(usage["cost_usd"])
                  and isinstance(usage["cost_known"], bool))
        except (JsonTextError, KeyError, TypeError):
            ok = False
        if not ok:
            self._note("corrupt", f"judge cache file {path} is not a whole answer for its key; ignored and asked the model again")
            return None
        return {"text": data["text"], "finish_reason": data["finish_reason"], "usage": {**usage, "cost_usd": float(usage["cost_usd"])}}

    def _write(self, path: Path, key: str, sample: int, completion: Completion) -> None:
        u = completion.usage
        data = {"key": key, "model": self.client.model, "sample": sample, "text": completion.text, "finish_reason": completion.finish_reason,
                "usage": {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "cost_usd": u.cost_usd, "cost_known": u.cost_known}}
        tmp = temp_sibling(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A lone surrogate is escaped (\\ud800), never written raw; reading it back counts the entry as corrupt.
            with open(tmp, "x", encoding="utf-8") as f:
                f.write(json.dumps(data, ensure_ascii=lone_surrogate(completion.text) is not None))
            os.replace(tmp, path)  # readers see the old file or the new one, never a part
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            self._note("unwritable", f"judge cache file {path} could not be written ({reason(exc)}); the answer was used but not kept")
