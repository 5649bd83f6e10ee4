"""The command line's own behaviour (issue #20): --version, broken pipes, output folders."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import pbsim
from pbsim.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"pbsim {pbsim.__version__}"


def test_a_closed_pipe_is_not_a_traceback():
    """`pbsim info chain3000 --json | head -1` (~0.8 MB, beyond a pipe buffer): the reader leaves
    early; pbsim exits quietly."""
    p = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pbsim.cli import main; sys.exit(main())",
            "info",
            "chain3000",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout.read(1) == b"{"
    p.stdout.close()  # like `head -1` exiting
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert p.returncode == 0


def test_rollout_makes_the_output_folders(tmp_path):
    out, plot = tmp_path / "runs" / "a" / "t.npz", tmp_path / "figs" / "e.png"
    assert main(["rollout", "chain10", "--steps", "3", "--quiet", "--out", str(out), "--plot", str(plot)]) == 0
    with np.load(out) as d:
        assert d["q"].shape[0] == 4
    assert plot.stat().st_size > 0


def test_rollout_control_spd_without_gains_uses_the_documented_defaults(monkeypatch):
    """`--control spd` without --kp/--kd: kp = 30 M, kd = M (pbsim.control.motions.default_gains,
    the viewer's and --motion's), not 0; given gains still win."""
    import pbsim.control as pc
    from pbsim.control.motions import default_gains
    from pbsim_models import chain

    seen = []
    real = pc.control_from_args

    def spy(model, **kw):
        seen.append((kw["kp"], kw["kd"]))
        return real(model, **kw)

    monkeypatch.setattr(pc, "control_from_args", spy)
    base = ["rollout", "chain3", "--integrator", "euler", "--steps", "2", "--quiet", "--json"]
    assert main(base + ["--control", "spd"]) == 0
    assert main(base + ["--control", "spd", "--kp", "5", "--kd", "0.5"]) == 0
    kp, kd = default_gains(chain(3))
    assert seen[0] == (kp, kd) and seen[1] == ("5", "0.5")
