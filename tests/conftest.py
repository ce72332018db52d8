from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_scenario() -> Path:
    return ROOT / "scenarios" / "small.toml"


@pytest.fixture(autouse=True)
def host_profile(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tests never read or write the user's host profile: a `from = "host"` scenario reads
    this one (absent until a test writes it)."""
    path = tmp_path_factory.mktemp("host") / "host.toml"
    monkeypatch.setenv("RECLAIMLAB_HOST_PROFILE", str(path))
    return path
