"""Listings and machine-readable output: `reclaimlab scenarios`, `live check --json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaimlab.cli import cli


def test_scenarios_lists_the_shipped_scenarios_and_the_workloads() -> None:
    r = CliRunner().invoke(cli, ["scenarios", "--json"])
    assert r.exit_code == 0, r.output
    listing = json.loads(r.output)
    by_path = {Path(s["path"]).as_posix().split("scenarios/", 1)[-1]: s["description"] for s in listing["scenarios"]}
    assert by_path["small.toml"].startswith("Two 1 GiB nodes")
    assert "seed000/test3.toml" in by_path and "seed000/reference.toml" not in by_path
    kinds = {w["kind"]: w for w in listing["workloads"]}
    assert kinds["usemem"]["simulated"] and kinds["stutter"]["simulated"]
    assert kinds["mapped-file-stream"]["simulated"]
    text = CliRunner().invoke(cli, ["scenarios"]).output
    assert "small.toml" in text and "stutter" in text


def test_live_check_json_lists_each_feature(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from reclaimlab.live import cli as live_cli
    from reclaimlab.live.fake import FakeBackend

    monkeypatch.setenv("RECLAIMLAB_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(live_cli, "backend", FakeBackend)
    r = CliRunner().invoke(cli, ["live", "check", "--json"])
    assert r.exit_code == 0, r.output
    rows = {row["feature"]: row for row in json.loads(r.output)}
    assert rows["root"]["ok"] is True and rows["hugetlb squeeze"]["ok"] is True
