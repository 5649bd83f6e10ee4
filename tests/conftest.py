"""Shared fixtures: where third-party robot files live, and skips when they are absent."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_dir() -> Path | None:
    """``../shared`` beside the clone (CI), or $PBSIM_SHARED; None when absent."""
    env = os.environ.get("PBSIM_SHARED")
    for cand in ([Path(env)] if env else []) + [ROOT.parent / "shared"]:
        if (cand / "robots").is_dir():
            return cand
    return None


def robosimian_urdf(active: bool = True) -> Path:
    s = shared_dir()
    if s is None:
        pytest.skip("../shared (Robosimian) is not beside this clone")
    name = "robosimian_caesar_new_all_active.urdf" if active else "robosimian_caesar_new.urdf"
    return s / "robots" / "robosimian" / name


def terrain_file(name: str) -> Path:
    s = shared_dir()
    if s is None:
        pytest.skip("../shared terrains are not beside this clone")
    return s / "robots" / "robosimian" / "terrains" / name


def pybullet_file(rel: str) -> str:
    pybullet_data = pytest.importorskip("pybullet_data")
    p = os.path.join(pybullet_data.getDataPath(), rel)
    if not os.path.isfile(p):
        pytest.skip(f"{rel} not shipped by this pybullet_data")
    return p


def gymnasium_xml(name: str) -> str:
    gym = pytest.importorskip("gymnasium")
    p = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", name)
    if not os.path.isfile(p):
        pytest.skip(f"gymnasium does not ship {name}")
    return p


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
