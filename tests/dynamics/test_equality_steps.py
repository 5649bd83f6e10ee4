"""Equality constraints held by the steps themselves (``Integrator.step``'s kernels, where
test_equality.py runs the rollout kernels): pbad's and pbd_nmdp's penalty and projection, the
explicit steps' CUDA twins.  Models and oracle in test_equality.py; a file of its own so that these
step kernels compile on another test worker than the rollouts there."""

import numpy as np
import pytest
from test_equality import _load, _mujoco_final, _xml

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


@pytest.mark.parametrize("method", ["pbad3", "pbad4"])
def test_collocation_orders_keep_every_kind_of_row(tmp_path, method):
    """PBAD's collocation orders hold the constraints as order 2's penalty force ``kc J^T phi`` at
    every unknown node of Eq. 6 (with its Gauss-Newton block ``kc J^T J`` in the Jacobian), move LM's
    trial nodes back to the constraint value the linear model predicts (as pbfd), and project the
    end node and its velocity onto the constraints (pbsim.integrators.pbad.colloc).  The four models
    at 20 and 50 ms for 3 s: every step converged (roots of Eq. 6 or order-2 fallbacks), closed to
    1e-9 (measured <= 2.2e-15), and the mechanism moves.  Collocation is not dissipative (pbad3 on
    the four-bar without its constraint gains up to 0.09 J of 0.79 J at 50 ms); with
    ``energy_guard=0`` the four-bar gains none (measured: its energy stays 1.2e-3 / 6.6e-3 J below
    the start at 20 / 50 ms)."""
    for name in ("fourbar", "weld", "poly", "tendon"):
        _held_for_3_s(_load(tmp_path, name, _xml(name, 1e-3, "Euler")), method)
    m = _load(tmp_path, "fourbar", _xml("fourbar", 1e-3, "Euler"))
    e0 = pbsim.energy(m, m.default_configuration(), np.zeros(m.nv)).sum()
    for dt in (0.02, 0.05):
        integ = make(method, m, energy_guard=0.0)
        st = pbsim.State.make(m, m.default_configuration())
        for _ in range(int(round(3.0 / dt))):
            st, diag = integ.step(st, None, dt)
            assert pbsim.energy(m, st.q[0], st.v[0]).sum() <= e0 + 1e-9
            assert np.abs(equality_residual(m, st.q[0])[0]).max() < 1e-9


def test_collocation_orders_keep_their_accuracy_under_constraints(tmp_path):
    """The penalty and the projection do not spoil collocation's order: the cubic joint coupling
    over 1 s against stiff MuJoCo (RK4 at 0.1 ms, converged to ~1e-5 rad), at 10 and 5 ms.  pbad4
    is within 1e-4 rad at 5 ms (measured 1.1e-5; 7.3e-5 at 10 ms), pbad3 within 2e-3 (measured
    1.2e-3; 5.0e-3 at 10 ms), and both errors fall by more than 3x when dt halves (measured 6.4x,
    4.2x); pbad (order 2) is 0.2 rad off at 5 ms."""
    m = _load(tmp_path, "poly", _xml("poly", 1e-3, "Euler"))
    ref = _mujoco_final(_xml("poly", 1e-4, "RK4"), 1.0)
    err = {}
    for method in ("pbad3", "pbad4"):
        for dt in (0.01, 0.005):
            integ = make(method, m)
            st = pbsim.State.make(m, m.default_configuration())
            for _ in range(int(round(1.0 / dt))):
                st, diag = integ.step(st, None, dt)
                assert diag.converged.all()
            err[method, dt] = np.abs(pbsim.difference(m, st.q[0], ref)).max()
    assert err["pbad4", 0.005] < 1e-4 and err["pbad3", 0.005] < 2e-3, err
    assert err["pbad4", 0.01] > 3 * err["pbad4", 0.005] and err["pbad3", 0.01] > 3 * err["pbad3", 0.005], err
    assert np.abs(pbsim.difference(m, st.q[0], m.default_configuration())).max() > 0.1  # it moved


def test_variational_holds_the_rows_as_rattle(tmp_path):
    """The variational integrator (RIQN) takes the rows into its DEL as RATTLE does: the impulse
    ``J(q_k)^T lambda`` with ``phi(q_k+1) = 0``, its O(n) update bordered by the rows (SHAKE's
    matrix ``J(q_i) A^-1 J(q_k)^T``), the momentum projected onto ``J(q_k+1) M^-1 p = 0``
    (pbsim.integrators.variational.step).  The weld, the cubic coupling and the tendon coupling
    at 20 and 50 ms for 3 s: every step converged, closed to 1e-9 (measured <= 1.8e-15).  The
    four-bar at 5 ms: its toggle position, passed at 14 rad/s, defeats the iteration at 20 ms (one
    step in 150 ends 4e-3 m open, reported unconverged); at 10 ms every step converges but the
    energy drifts (0.39 J of 0.79 J over 30 s).  At 5 ms the energy error stays bounded, as a
    symplectic scheme's: within 0.03 J over 3 s (measured 0.017; 0.022 over 30 s, 0.005 at 2.5 ms)."""
    for name in ("weld", "poly", "tendon"):
        _held_for_3_s(_load(tmp_path, name, _xml(name, 1e-3, "Euler")), "variational")
    m = _load(tmp_path, "fourbar", _xml("fourbar", 1e-3, "Euler"))
    integ = make("variational", m)
    st = pbsim.State.make(m, m.default_configuration())
    e0 = pbsim.energy(m, st.q[0], st.v[0]).sum()
    de, q1 = [], []
    for _ in range(600):
        st, diag = integ.step(st, None, 0.005)
        assert diag.converged.all()
        assert np.abs(equality_residual(m, st.q[0])[0]).max() < 1e-9
        de.append(abs(pbsim.energy(m, st.q[0], st.v[0]).sum() - e0))
        q1.append(st.q[0, 0])
    assert max(de) < 0.03, max(de)
    assert np.ptp(q1) > 1.0
    # the compiled rollout (its momentum carried from step to step) gives the same states
    tr = pbsim.rollout(m, "variational", dt=0.005, steps=600, q0=m.default_configuration())
    assert np.abs(tr.q[-1] - st.q[0]).max() < 1e-9, np.abs(tr.q[-1] - st.q[0]).max()


@pytest.mark.parametrize("name", ["poly", "weld", "fourbar"])
def test_variational_under_constraints_is_second_order(tmp_path, name):
    """Against stiff MuJoCo over 1 s (RK4 at 0.1 ms): the error falls 4x when dt halves from 10
    to 5 ms (measured 4.0, 3.9, 6.1) and is within 5e-3 rad at 5 ms (measured 2.1e-4, 3.8e-3,
    5.2e-3 -> 2.5 ms: 5.4e-5, 9.5e-4, 1.2e-3)."""
    m = _load(tmp_path, name, _xml(name, 1e-3, "Euler"))
    ref = _mujoco_final(_xml(name, 1e-4, "RK4"), 1.0)
    err = {}
    for dt in (0.01, 0.005, 0.0025):
        tr = pbsim.rollout(m, "variational", dt=dt, steps=int(round(1.0 / dt)), q0=m.default_configuration())
        err[dt] = np.abs(pbsim.difference(m, tr.q[-1], ref)).max()
    assert err[0.01] > 3.5 * err[0.005] and err[0.005] > 3.5 * err[0.0025], err
    assert err[0.0025] < 2e-3, err


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
