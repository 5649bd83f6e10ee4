"""Equality constraints held by the steps themselves (``Integrator.step``'s kernels, where
test_equality.py runs the rollout kernels): pbad's and pbd_nmdp's penalty and projection, the
explicit steps' CUDA twins.  Models and oracle in test_equality.py; a file of its own so that these
step kernels compile on another test worker than the rollouts there."""

import numpy as np
import pytest
from test_equality import _load, _xml

import pbsim
from pbsim.dynamics.equality import equality_residual
from pbsim.integrators import make

pytest.importorskip("mujoco")


@pytest.mark.parametrize("method", ["pbad", "pbd_nmdp", "pbfd", "pbd_friction"])
@pytest.mark.parametrize("dt", [0.02, 0.05])
def test_position_based_keep_the_loop_closed(tmp_path, dt, method):
    """pbad, pbd_nmdp, pbfd and pbd_friction hold the constraint as a stiff penalty in their step's
    objective (kc = 1e4 M / dt^2 per row, pbsim.dynamics.equality.EQ_PENALTY) and project each
    step's result onto it (two Newton steps in the mass metric): the four-bar swings down for 3 s
    and stays closed to 1e-9 m at 20 and 50 ms (measured 2e-16 m), every step converged, no energy
    gained."""
    m = _load(tmp_path, "fourbar", _xml("fourbar", 1e-3, "Euler"))
    integ = make(method, m)
    st = pbsim.State.make(m, m.default_configuration())
    e0 = pbsim.energy(m, st.q[0], st.v[0]).sum()
    viol, q1, en = [], [], []
    for _ in range(int(round(3.0 / dt))):
        st, diag = integ.step(st, None, dt)
        assert diag.converged.all()
        viol.append(np.abs(equality_residual(m, st.q[0])[0]).max())
        q1.append(st.q[0, 0])
        en.append(pbsim.energy(m, st.q[0], st.v[0]).sum())
    assert max(viol) < 1e-9, max(viol)
    assert np.ptp(q1) > 1.0  # it swung
    assert max(en) <= e0 + 1e-9


@pytest.mark.parametrize("method,options", [("pbfd", {}), ("pbd_friction", {"optimizer": "jtj"})])
@pytest.mark.parametrize("dt", [0.02, 0.05])
def test_pbfd_lm_holds_a_weld_in_few_iterations_and_equals_pbad(tmp_path, method, options, dt):
    """pbfd's JTJ-LM on ``|r|^2`` with a weld tying a free box to an arm (no contact, so
    ``r = grad E`` and the step's root is pbad's).  Before the trials' second-order correction and
    the penalty-free Marquardt scaling (pbsim.integrators.pbfd.solve) no step converged: every one
    needed 32 sub-steps and ~3000 iterations and ended at ``|r| ~ 1e-3``.  Now every step
    converges in at most 10 iterations with no sub-step (measured 4-8), the box stays welded, and
    the trajectory is pbad's to 1e-7 (measured 6.1e-8 at 20 ms, 1.5e-8 at 50 ms) over 1 s."""
    m = _load(tmp_path, "weld", _xml("weld", 1e-3, "Euler"))
    a, b = make(method, m, **options), make("pbad", m)
    sa = sb = pbsim.State.make(m, m.default_configuration())
    for _ in range(int(round(1.0 / dt))):
        sa, da = a.step(sa, None, dt)
        sb, db = b.step(sb, None, dt)
        assert da.converged.all() and da.iterations[0] <= 10 and da.extra["substeps"][0] == 1
        assert db.converged.all()
        assert np.abs(equality_residual(m, sa.q[0])[0]).max() < 1e-9
    assert np.abs(sa.q - sb.q).max() < 1e-7, np.abs(sa.q - sb.q).max()
    assert np.abs(sb.q[0] - m.default_configuration()).max() > 0.5  # it moved


@pytest.mark.parametrize("method", ["nmdp", "nmdp_zo"])
@pytest.mark.parametrize("name", ["fourbar", "weld", "poly", "tendon"])
def test_nmdp_keeps_every_kind_of_row(tmp_path, method, name):
    """NE-NMDP holds the constraints as PBAD's penalty force ``kc J^T phi`` in G (nmdp_eval) and
    projects each sub-step's result onto them (pgm.step): connect, weld, a cubic joint coupling and
    a fixed-tendon coupling, 3 s at 20 and 50 ms, every step converged, closed to 1e-9 (measured
    <= 1.3e-15), and the mechanism moves.  Its Newton projection's trials get the second-order
    correction (pbsim.dynamics.equality.equality_second_order_correction): without it the cubic
    coupling's step at t = 2.8 s (20 ms, nmdp) failed 96 projections, as the first Newton step
    along the curved constraint raised |G| from 3 to 2e3, and ended on the sub-step cap at
    ``|G| = 3e-4``."""
    _held_for_3_s(_load(tmp_path, name, _xml(name, 1e-3, "Euler")), method)


def _held_for_3_s(m, method):
    """3 s at 20 and 50 ms from qpos0: every step converged, the constraints closed to 1e-9 after
    every step, and the mechanism moves."""
    for dt in (0.02, 0.05):
        integ = make(method, m)
        st = pbsim.State.make(m, m.default_configuration())
        viol, q = [], []
        for _ in range(int(round(3.0 / dt))):
            st, diag = integ.step(st, None, dt)
            assert diag.converged.all(), (m.name, dt, len(q))
            viol.append(np.abs(equality_residual(m, st.q[0])[0]).max())
            q.append(st.q[0].copy())
        assert max(viol) < 1e-9, (m.name, dt, max(viol))
        assert np.ptp(np.array(q), axis=0).max() > 0.5, m.name


@pytest.mark.parametrize("method", ["ne_mdp", "ne_dry"])
def test_velocity_level_keep_every_kind_of_row(tmp_path, method):
    """The velocity-level methods hold the constraints as bilateral rows of their step
    (pbsim.integrators.velocity_level.equality): ``v*`` and every contact response projected onto
    ``J v+ = -phi / dt`` in the metric of ``Mt``, then ``q+`` onto ``phi = 0`` and ``v+`` onto
    ``J(q+) v = 0``.  The four models at 20 and 50 ms for 3 s: every step solved, closed to 1e-9
    (measured <= 1.3e-15; with two fixed Newton steps and no velocity projection the four-bar
    drifted to 4.7e-4 at 50 ms), and the mechanism moves.  These are forward (semi-implicit Euler)
    steps, whose energy is not bounded at large dt with or without constraints (the weld at 50 ms:
    +0.43 J, euler +2.6 J), so energy is not asserted."""
    for name in ("fourbar", "weld", "poly", "tendon"):
        _held_for_3_s(_load(tmp_path, name, _xml(name, 1e-3, "Euler")), method)


@pytest.mark.parametrize("method", ["ne_mdp", "ne_dry"])
def test_velocity_level_welded_boxes_rest_as_one_body(tmp_path, method):
    """Contact through the constraint: two free boxes welded side by side, dropped 10 cm onto a
    floor, against one body carrying both boxes.  The contact responses are projected onto the
    weld, so the pair lands and rests as the rigid body does: after 2 s at 10 ms the heights
    agree to 1 mm (measured with ne_mdp: 83.15 against 82.99 mm) and the weld holds to 1e-9."""
    boxes = '<geom type="box" size="0.1 0.1 0.1" mass="1"/>'
    welded = (
        '<mujoco><worldbody><geom type="plane" size="2 2 0.1"/>'
        f'<body name="a" pos="0 0 0.2"><freejoint/>{boxes}</body>'
        f'<body name="b" pos="0.25 0 0.2"><freejoint/>{boxes}</body></worldbody>'
        '<contact><exclude body1="a" body2="b"/></contact><equality><weld body1="a" body2="b"/></equality></mujoco>'
    )
    one = (
        '<mujoco><worldbody><geom type="plane" size="2 2 0.1"/>'
        f'<body name="a" pos="0 0 0.2"><freejoint/>{boxes}'
        '<geom type="box" pos="0.25 0 0" size="0.1 0.1 0.1" mass="1"/></body></worldbody></mujoco>'
    )
    z = []
    for name, xml in (("welded", welded), ("one", one)):
        m = _load(tmp_path, name, xml)
        integ = make(method, m, pbsim.make_scene(m))
        st = pbsim.State.make(m, m.default_configuration())
        for _ in range(200):
            st, diag = integ.step(st, None, 0.01)
            assert diag.converged.all()
            if name == "welded":
                assert np.abs(equality_residual(m, st.q[0])[0]).max() < 1e-9
        z.append(st.q[0, 2])
        assert abs(st.v[0]).max() < 0.05  # at rest
    assert 0.07 < z[1] < 0.1  # on the floor (half-height 0.1 m, minus the contact model's depth)
    assert abs(z[0] - z[1]) < 1e-3, z


def test_cuda_twins_equal_cpu(tmp_path):
    """The explicit steps' CUDA twins (under numba's simulator) give the CPU's states with the
    constraints held (four-bar, weld; euler, rk4; one start off the constraint), and MuJoCo's limit
    rows (tendon ranges, a ball cone) the same."""
    from pathlib import Path

    from conftest import run_cudasim_twin

    diffs, out = run_cudasim_twin(Path(__file__).parent / "_cudasim_equality.py", tmp_path / "cpu.npz")
    assert len(diffs) == 18 and max(diffs.values()) < 1e-12, out
