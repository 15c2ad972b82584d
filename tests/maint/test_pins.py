"""`maint rehash`: the backport pins in versions.toml follow the files on disk."""

from __future__ import annotations

from click.testing import CliRunner

from vllm_backports import maint

from .conftest import copy_checkout


def test_rehash_pins_an_edited_backport(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    patch = home / "backports/0.33.0/0001-turboquant-spec-decode.patch"
    patch.write_bytes(patch.read_bytes().replace(b"Last-Update: 2026-11-22", b"Last-Update: 2026-11-23"))
    drift = CliRunner().invoke(maint.main, ["rehash"])
    assert drift.exit_code == 1 and "0001-turboquant-spec-decode.patch" in drift.output
    assert CliRunner().invoke(maint.main, ["rehash", "--write"]).exit_code == 0
    assert CliRunner().invoke(maint.main, ["rehash"]).exit_code == 0
    from vllm_backports.catalogue import Catalogue

    assert Catalogue(home).series("0.33.0").patches[0].header["Last-Update"] == "2026-11-23"


def test_rehash_pins_added_files_drops_deleted_ones_and_reads_any_key_form(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    text = toml.read_text()
    table = '[series."0.33.0".files]\n'
    body = text[text.index(table):].split("\n\n", 1)[0]
    # A bare key, a placeholder and a comment; a new patch on disk; a pinned file deleted.
    old_pin = body.split('"0001-turboquant-spec-decode.patch" = "')[1].split('"')[0]
    edited = body.replace('"series" = ', "series = ").replace(f'"{old_pin}"', '"TODO"  # why')
    toml.write_text(text.replace(body, edited.rstrip("\n")))  # and no newline at the end of the file
    (home / "backports/0.33.0/0002-extra.patch").write_bytes(b"new\n")
    (home / "backports/0.32.0/0001-turboquant-spec-decode.patch").unlink()
    drift = CliRunner().invoke(maint.main, ["rehash"])
    assert drift.exit_code == 1 and "0002-extra.patch" in drift.output
    assert CliRunner().invoke(maint.main, ["rehash", "--write"]).exit_code == 0
    again = CliRunner().invoke(maint.main, ["rehash"])
    assert again.exit_code == 0, again.output  # current now
    import tomllib

    from vllm_backports.digest import sha256

    pins = tomllib.loads(toml.read_text())["series"]
    folder = home / "backports/0.33.0"
    assert pins["0.33.0"]["files"] == {f.name: sha256(f.read_bytes()) for f in folder.iterdir()}
    assert "0001-turboquant-spec-decode.patch" not in pins["0.32.0"]["files"]
    pin = pins["0.33.0"]["files"]["0001-turboquant-spec-decode.patch"]
    assert f'"0001-turboquant-spec-decode.patch" = "{pin}"  # why' in toml.read_text()


def test_rehash_reads_single_quoted_pins_and_ignores_dotfiles_as_the_catalogue_does(tmp_path, monkeypatch):
    import tomllib

    from vllm_backports.catalogue import Catalogue

    home = copy_checkout(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    text = toml.read_text()
    last_series = text.rindex('[series."0.33.0".files]\n"series" = "')
    start = last_series + len('[series."0.33.0".files]\n')
    end = text.index("\n", start)
    toml.write_text(text[:start] + "'series' = 'stale'" + text[end:])
    (home / "backports/0.33.0/.series.swp").write_bytes(b"editor")
    assert CliRunner().invoke(maint.main, ["rehash", "--write"]).exit_code == 0
    pins = tomllib.loads(toml.read_text())["series"]["0.33.0"]["files"]  # parses: no duplicate key
    assert ".series.swp" not in pins and pins["series"] != "stale"
    assert Catalogue(home).series("0.33.0").patches  # loads, swap file and all
