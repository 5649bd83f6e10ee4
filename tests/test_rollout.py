"""pbsim.rollout and `pbsim rollout`: bad dt / batch / steps are named errors before any kernel runs."""

import numpy as np
import pytest

import pbsim
from pbsim.cli import main
from pbsim.errors import InputError

import pbsim_models


@pytest.mark.parametrize("dt", [-0.01, 0.0, float("nan"), float("inf"), "x"])
def test_rollout_refuses_bad_dt(dt):
    with pytest.raises(InputError, match="dt must be a positive finite number"):
        pbsim.rollout(pbsim_models.chain(2), "euler", dt=dt, steps=2)


@pytest.mark.parametrize("batch", [0, -3, 2.5, "two", float("nan")])
def test_rollout_refuses_bad_batch(batch):
    with pytest.raises(InputError, match="batch must be a positive integer"):
        pbsim.rollout(pbsim_models.chain(2), "euler", dt=1e-3, steps=2, batch=batch)


def test_rollout_batch_replicates_state():
    tr = pbsim.rollout(pbsim_models.chain(2), "euler", dt=1e-3, steps=3, batch=2, q0=np.array([0.3, -0.2]))
    assert tr.q.shape[1] == 2 and np.array_equal(tr.q[:, 0], tr.q[:, 1])


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--batch", "0"], "batch must be a positive integer"),
        (["--dt", "-1"], "dt must be a positive finite number"),
        (["--steps", "-5"], "steps must be >= 0"),
    ],
)
def test_cli_rollout_bad_arguments_are_one_line_errors(args, msg, capsys):
    assert main(["rollout", "chain2", "--integrator", "euler", "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err


def test_cli_pbad_fallback_option(capsys):
    assert (
        main(
            [
                "rollout",
                "chain2",
                "--integrator",
                "pbad3",
                "--dt",
                "0.05",
                "--steps",
                "3",
                "--pbad-fallback",
                "pbad2",
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        main(["rollout", "chain2", "--integrator", "pbad", "--steps", "2", "--pbad-fallback", "pbad2", "--quiet"]) == 2
    )
    err = capsys.readouterr().err
    assert "--pbad-fallback applies to pbad3/pbad4 only" in err and "Traceback" not in err


def test_cli_pbad_energy_guard_option(capsys):
    assert (
        main(
            [
                "rollout",
                "chain2",
                "--integrator",
                "pbad4",
                "--dt",
                "0.05",
                "--steps",
                "3",
                "--pbad-energy-guard",
                "0",
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        main(["rollout", "chain2", "--integrator", "pbad", "--steps", "2", "--pbad-energy-guard", "0", "--quiet"]) == 2
    )
    assert (
        main(["rollout", "chain2", "--integrator", "pbad3", "--steps", "2", "--pbad-energy-guard", "-1", "--quiet"])
        == 2
    )
    err = capsys.readouterr().err
    assert "--pbad-energy-guard applies to pbad3/pbad4 only" in err and "energy_guard must be >= 0" in err
    assert "Traceback" not in err
