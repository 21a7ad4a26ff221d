"""scripts/runsc.sh (sourced by scripts/test.sh and scripts/demo.sh) asks for
bookworm-backports' runsc where the one here is missing or older than 20240729, adds that
suite to apt's sources once on Debian 12 and leaves a machine whose apt has it alone; run
against a stand-in /etc/apt, /etc/os-release and runsc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOKWORM = "PRETTY_NAME=Debian GNU/Linux 12 (bookworm)\nVERSION_CODENAME=bookworm\n"
TRIXIE = "PRETTY_NAME=Debian GNU/Linux 13 (trixie)\nVERSION_CODENAME=trixie\n"
DEBIAN_12 = "runsc version 0.0~20221219.0\nspec: 1.0.2-dev\n"
BACKPORTS = "runsc version 0.0~20240729.0\nspec: 1.0.2-dev\n"


def _source(tmp_path: Path, os_release: str, runsc: str | None) -> tuple[list[str], str]:
    """``need`` after sourcing the script, and what it said on stderr."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("grep", "head", "tee"):  # and no runsc but the stand-in
        link = bin_dir / tool
        if not link.exists():
            link.symlink_to(shutil.which(tool) or tool)
    fake = bin_dir / "runsc"
    fake.unlink(missing_ok=True)
    if runsc is not None:
        fake.write_text(f"#!/bin/sh\nprintf '{runsc}'\n")
        fake.chmod(0o755)
    (tmp_path / "os-release").write_text(os_release)
    (tmp_path / "apt" / "sources.list.d").mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["/bin/bash", "-c", 'set -euo pipefail; need=(); source "$0"; echo "${need[*]:-}"',
         str(ROOT / "scripts" / "runsc.sh")],
        capture_output=True, text=True, timeout=30, check=True,
        env={"PATH": str(bin_dir), "APT_ETC": str(tmp_path / "apt"),
             "OS_RELEASE": str(tmp_path / "os-release")},
    )  # fmt: skip
    return done.stdout.split(), done.stderr


@pytest.mark.parametrize("runsc", [DEBIAN_12, None], ids=["debian-12-runsc", "no-runsc"])
def test_bookworm_gets_the_backports_source_once_and_runsc_from_it(
    tmp_path: Path, runsc: str | None
) -> None:
    need, said = _source(tmp_path, BOOKWORM, runsc)
    assert need == ["runsc/bookworm-backports"]
    assert "adding Debian's bookworm-backports" in said
    source = tmp_path / "apt" / "sources.list.d" / "bookworm-backports.sources"
    assert "Suites: bookworm-backports\n" in source.read_text()
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in source.read_text()
    source.write_text(source.read_text() + "# kept\n")
    need, said = _source(tmp_path, BOOKWORM, runsc)  # again: the source is not written twice
    assert need == ["runsc/bookworm-backports"] and said == ""
    assert source.read_text().endswith("# kept\n")


def test_an_apt_that_has_backports_is_left_alone_and_a_comment_is_not_a_source(
    tmp_path: Path,
) -> None:
    listed = tmp_path / "apt" / "sources.list"
    listed.parent.mkdir(parents=True)
    listed.write_text("# deb http://deb.debian.org/debian bookworm-backports main\n")
    assert _source(tmp_path, BOOKWORM, DEBIAN_12)[0] == ["runsc/bookworm-backports"]
    added = tmp_path / "apt" / "sources.list.d" / "bookworm-backports.sources"
    assert added.is_file()
    added.unlink()
    listed.write_text("deb http://mirror.example/debian bookworm-backports main contrib\n")
    assert _source(tmp_path, BOOKWORM, DEBIAN_12) == (["runsc/bookworm-backports"], "")
    assert not added.exists()


@pytest.mark.parametrize(
    "runsc", [BACKPORTS, "runsc version release-20250101.0\n"], ids=["backports", "upstream"]
)
def test_a_runsc_as_new_as_backports_asks_for_nothing(tmp_path: Path, runsc: str) -> None:
    assert _source(tmp_path, BOOKWORM, runsc) == ([], "")
    assert not any((tmp_path / "apt" / "sources.list.d").iterdir())


def test_elsewhere_the_distributions_runsc_and_only_when_missing(tmp_path: Path) -> None:
    assert _source(tmp_path, TRIXIE, None) == (["runsc"], "")
    assert _source(tmp_path, TRIXIE, DEBIAN_12) == ([], "")
    assert not any((tmp_path / "apt" / "sources.list.d").iterdir())
