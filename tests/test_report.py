"""Rendering: one JSON object on stdout under --json and nothing else; for people, lines and a
table on stdout and progress, notes and errors on stderr, each message shown as written (never
read as rich markup)."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

from rich.console import Console
from rich.table import Table
from rich.text import Text

from vllm_backports import engine
from vllm_backports.report import STYLE, Reporter, outcome_table

MARKUP = "vllm/[bold]x[/bold].py"  # a path that rich would read as markup unless escaped


def _table(*rows: str) -> Table:
    table = Table(title="the-title")
    table.add_column("c")
    for row in rows:
        table.add_row(row)
    return table


def _text(table: Table) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(table)
    return out.getvalue()


def test_json_mode_prints_the_payload_alone_as_one_sorted_object(capsys):
    reporter = Reporter(as_json=True)
    reporter.progress("reading PyPI")
    reporter.note("a note")
    reporter.emit({"b": 1, "a": [2]}, _table("row"), ["a line"], before=["a heading"])
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out) == {"a": [2], "b": 1}
    assert out.index('"a"') < out.index('"b"')  # keys sorted: the output is stable run to run
    assert "a line" not in out and "the-title" not in out and "a heading" not in out


def test_for_people_before_then_the_table_then_the_lines_on_stdout(capsys):
    Reporter(as_json=False).emit({"payload": "not shown"}, _table("row-1"), ["after"], before=["first"])
    out, err = capsys.readouterr()
    assert err == "" and "payload" not in out
    assert out.index("first") < out.index("the-title") < out.index("row-1") < out.index("after")


def test_a_table_without_rows_is_left_out(capsys):
    Reporter(as_json=False).emit({}, _table(), ["nothing to do"])
    out = capsys.readouterr().out
    assert "the-title" not in out and out == "nothing to do\n"


def test_progress_notes_and_errors_go_to_stderr_as_written(capsys):
    reporter = Reporter(as_json=False)
    reporter.progress(MARKUP)
    reporter.note(MARKUP)
    reporter.error(MARKUP, 2)
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [MARKUP, f"note: {MARKUP}", f"error: {MARKUP}"]


def test_an_error_under_json_is_one_object_with_its_code(capsys):
    Reporter(as_json=True).error("no such release", 2)
    out, err = capsys.readouterr()
    assert err == "" and out.count("\n") == 1
    assert json.loads(out) == {"error": "no such release", "exit_code": 2}


def _outcome(state: str, id_: str = "gdn-spec-state", detail: str = "") -> SimpleNamespace:
    return SimpleNamespace(id=id_, patch="0001-gdn.patch", state=state, detail=detail)


def test_the_outcome_table_has_a_row_an_outcome_its_state_styled():
    table = outcome_table("apply: 0.20.0", [_outcome("applied"), _outcome("drift"), _outcome("already")])
    assert table.title == "apply: 0.20.0" and table.row_count == 3
    assert [c.header for c in table.columns] == ["backport", "patch", "state", "detail"]
    states = [Text.from_markup(cell) for cell in table.columns[2].cells]
    assert [s.plain for s in states] == ["applied", "drift", "already"]
    assert [[span.style for span in s.spans] for s in states] == [["green"], ["bold red"], ["dim"]]


def test_every_state_the_engine_reports_has_a_style():
    # A state without one renders as "[]state[/]", which rich refuses as markup.
    states = (engine.APPLIED, engine.CLEAN, engine.ALREADY, engine.UPSTREAM, engine.DRIFT, engine.SKIPPED,
              engine.REVERTED, engine.NOT_APPLIED)
    assert all(STYLE.get(state) for state in states)
    text = _text(outcome_table("t", [_outcome(state) for state in states]))
    assert all(state in text for state in states)


def test_the_outcome_table_shows_ids_patches_and_details_as_written():
    text = _text(outcome_table("t", [_outcome("clean", id_="[x]", detail=MARKUP)]))
    assert "[x]" in text and MARKUP in text and "0001-gdn.patch" in text and "clean" in text
