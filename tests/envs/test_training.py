"""The examples of issue #21 in miniature: the policy evaluation runs with several contact-capable
integrators (scripts/examples/eval_policy.py), and CMA-ES on the swimmer's gait improves its forward
distance within 3 generations (scripts/examples/train_swimmer.py, pbsim.envs.gaits)."""

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("cma")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "examples"))


def test_policy_evaluation_runs_with_contact_integrators():
    from eval_policy import pd_policy, run

    rows = run(["euler", "pbad"], "Hopper", pd_policy, episodes=2, steps=5, quiet=True)
    assert [r["integrator"] for r in rows] == ["euler", "pbad"]
    for r in rows:
        assert "error" not in r, r
        assert r["length"] == 5 and r["diverged"] == 0 and np.isfinite(r["ret"])


def test_cmaes_improves_the_swimmer_in_three_generations():
    from pbsim.envs.gaits import SineGait, gait_rollout, train_gait

    run = train_gait("Swimmer", generations=3, popsize=6, steps=20, seed=2)
    h = run["result"].history
    assert len(h["generation"]) == 3 and h["evaluations"][-1] == 18
    assert run["best"]["distance"] > run["initial"]["distance"]
    # the summary is the best controller's own rollout
    again = gait_rollout("Swimmer", SineGait(3), run["result"].x[None], 20, seed=2)
    assert again["distance"][0] == pytest.approx(run["best"]["distance"], rel=1e-12)


def test_cli_optimize(tmp_path, capsys):
    from pbsim.cli import main

    out, png = tmp_path / "best.npz", tmp_path / "curve.png"
    rc = main(
        [
            "optimize",
            "swimmer",
            "--generations",
            "2",
            "--popsize",
            "4",
            "--steps",
            "10",
            "--out",
            str(out),
            "--plot",
            str(png),
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "gen   2" in text and "best distance" in text
    d = np.load(out)
    assert d["x"].shape == (10,) and len(d["history_best"]) == 2 and png.stat().st_size > 1000
    assert main(["optimize", "nosuchtask"]) == 2
