"""lab.sites.fi_path: the path FlashInfer runs get, from its site's .pth files."""

from __future__ import annotations

from pathlib import Path

from lab import sites


def fi_path(home: Path) -> list[str]:
    return sites.fi_path(home).split(":")


def test_paths_and_code_lines_of_pth_files_both_reach_the_path(tmp_path):
    site = tmp_path / "fi-site"
    # cutlass-dsl 4.5 / 4.6: a directory named in the .pth file
    (site / "python_packages").mkdir(parents=True)
    (site / "old.pth").write_text("# comment\npython_packages\n")
    # 4.8: a line of code importing the package, which puts its directory on sys.path
    (site / "nvidia_cutlass_dsl" / "dsl_packages").mkdir(parents=True)
    (site / "nvidia_cutlass_dsl" / "__init__.py").write_text("")
    (site / "new.pth").write_text(
        "import sys, os, nvidia_cutlass_dsl; "
        "sys.path.insert(0, os.path.join(nvidia_cutlass_dsl.__path__[0], 'dsl_packages'))\n"
    )
    got = fi_path(tmp_path)
    assert got[0] == str(site)
    assert set(got[1:]) == {str(site / "python_packages"), str(site / "nvidia_cutlass_dsl" / "dsl_packages")}


def test_a_site_without_pth_files_is_the_site_alone(tmp_path):
    (tmp_path / "fi-site").mkdir()
    assert fi_path(tmp_path) == [str(tmp_path / "fi-site")]
