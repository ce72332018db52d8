from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_scenario() -> Path:
    return ROOT / "scenarios" / "small.toml"
