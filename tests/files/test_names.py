"""Folder names made from input names: safe names kept, hostile ones made safe, never two names in one folder."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dynsteer_hook.files.names import MAX_NAME, NameBook, is_entry_name, is_safe_name, name_part, safe_name

HOSTILE = ["../../x", "/etc/passwd", "..", ".", "", "a/b", "a\\b", "line\nbreak", "<script>alert(1)</script>", "x" * 5000,
           "CON", "nul.txt", "-rf", ".hidden", "trailing.", "é ü", "\x00zero", "a:b", "\udcff", "🙂"]


def test_scenario_names_and_record_stems_stay_as_they_are() -> None:
    for name in ("send_message_with_contact_content_cellular_off", "0000-0010", "sample_1", "a.b-c"):
        assert safe_name(name) == name


def test_hostile_names_become_one_plain_component(tmp_path: Path) -> None:
    made = {safe_name(h) for h in HOSTILE}
    assert len(made) == len(HOSTILE)  # no two hostile names share a folder
    for folder in made:
        assert is_safe_name(folder), folder
        target = (tmp_path / folder).resolve()
        assert target.parent == tmp_path.resolve()
        target.mkdir()
    assert safe_name("../../x").startswith("x-")
    assert len(safe_name("x" * 5000)) <= MAX_NAME


def test_a_book_keeps_names_apart_even_when_only_case_differs() -> None:
    book = NameBook()
    a, b, c = book.claim("Scenario"), book.claim("scenario"), book.claim("Scenario")
    assert a == c == "Scenario" and b != a and b.casefold() != a.casefold()
    taken = NameBook(taken={"index.html", "trajectories"})
    assert taken.claim("trajectories") != "trajectories"
    assert taken.claim(7) == "7"


@given(st.lists(st.text(max_size=40), max_size=30))
def test_a_book_never_gives_two_names_one_folder(names: list[str]) -> None:
    book = NameBook()
    folders = {n: book.claim(n) for n in names}
    assert len(set(f.casefold() for f in folders.values())) == len(folders)
    assert all(is_safe_name(f) for f in folders.values())


def test_one_name_from_two_places_gets_two_folders_the_first_keeping_it() -> None:
    """Two recorded runs both named ``run`` (two places): the first keeps ``run``, the second gets its own folder."""
    book = NameBook(taken={"index.html"})
    first, second = book.claim("run", key="/a/run"), book.claim("run", key="/b/run")
    assert first == "run" and second != first and is_safe_name(second)
    assert book.claim("run", key="/a/run") == first and book.claim("index.html", key="/c/index.html") != "index.html"


def test_only_a_plain_entry_name_is_looked_up_in_a_folder() -> None:
    for name in ("", ".", "..", "../x", "a/b", "a\\b", "/abs", "x\x00y"):
        assert not is_entry_name(name), name
    for name in ("s.json", "line\nbreak", "<b>x", "...", ".hidden"):
        assert is_entry_name(name), name


def test_a_model_string_becomes_a_readable_part_of_a_run_folder_name() -> None:
    assert name_part("openai/gpt-4o-mini") == "openai_gpt-4o-mini" and name_part("ollama/llama3:8b") == "ollama_llama3_8b"
    assert name_part("../../x") == "x" and name_part("\n") == "model" and len(name_part("m" * 500)) == 40
