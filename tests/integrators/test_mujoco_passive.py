"""MuJoCo's passive forces beyond the 1-DOF joints, in every family of methods: gravity
compensation (MJCF body ``gravcomp``, :mod:`pbsim.dynamics.gravcomp`) and the springs of ball and
free joints (MJCF ``stiffness``, :func:`pbsim.dynamics.passive.ball_springs`).  Before, both were
dropped (named in ``pbsim info``).

Each force enters a method where that method takes its partner force, so one method per code
path is run (the others share the path's kernels): ``euler`` for ``joint_forces``' explicit
forces (rk2-4, explicit_euler, ne_dry, ne_mdp, MABA read the same), ``pbad`` for the position-based
potentials and their tangent gradient (pbad4, pbfd, pbd_friction, pbd_nmdp read the same
``inertial_gravity_terms`` / ``joint_energy``), ``pbad3`` for the collocation residual and its
carry-free start node, ``variational`` for DRNEA's weight and the DEL impulse, ``nmdp`` for its
step at theta (``Integrator.step``: the diagnostics give its Newton iterations).  In one file so
that one test worker compiles these kernels once."""

import numpy as np
import pytest

import pbsim
from conftest import mjcf_pair
from pbsim.dynamics.passive import ball_springs, passive_torques

mujoco = pytest.importorskip("mujoco")

ARM = """<mujoco><option gravity="0 0 {gz}"/>
<worldbody>
  <body name="upper" pos="0 0 1"{gc}><joint name="shoulder" type="hinge" axis="0 1 0" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
    <body name="fore" pos="0.3 0 0"{gc}><joint name="elbow" type="hinge" axis="0 0.6 0.8" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025" mass="0.6"/>
      <body name="tip" pos="0.25 0 0"{gc}><joint name="slide" type="slide" axis="1 0 0" damping="0.5"/>
        <geom type="sphere" size="0.03" mass="0.2"/></body></body></body>
</worldbody></mujoco>"""
V0 = np.array([1.0, -2.0, 0.3])
ROLLOUT_METHODS = ["euler", "pbad", "pbad3", "variational"]


def _steps(model, method, dt, steps, q0=None, v0=None):
    """The final q (and every q, v) of ``steps`` steps: rollout, or ``Integrator.step`` for nmdp
    (with its Newton iterations summed)."""
    if method != "nmdp":
        tr = pbsim.rollout(model, method, dt=dt, steps=steps, q0=q0, v0=v0, scene=pbsim.Scene())
        return tr.q, tr.v, None
    integ = pbsim.integrators.make("nmdp", model, scene=pbsim.Scene())
    s = pbsim.State.make(model, model.neutral() if q0 is None else q0, v0)
    qs, vs, n = [s.q[0].copy()], [s.v[0].copy()], 0
    for _ in range(steps):
        s, d = integ.step(s, None, dt)
        qs.append(s.q[0].copy())
        vs.append(s.v[0].copy())
        n += int(np.sum(d.extra["newton_iterations"]))
    return np.array(qs), np.array(vs), n


# ---------------------------------------------------------------------------------- gravcomp


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    d = tmp_path_factory.mktemp("gravcomp")
    out = []
    for name, gz, gc in (("held", -9.81, ' gravcomp="0.5"'), ("half", -4.905, ""), ("full", -9.81, "")):
        p = d / f"{name}.xml"
        p.write_text(ARM.format(gz=gz, gc=gc))
        out.append(pbsim.load(str(p)))
    return out


@pytest.mark.parametrize("method", ROLLOUT_METHODS + ["nmdp"])
def test_half_compensation_is_half_gravity(arms, method):
    """The same share on every body is gravity scaled by ``1 - c``: the arm with
    ``gravcomp="0.5"`` under g moves as the arm under g / 2, 0.5 s at 20 ms, within 1e-7 rad (m)
    (measured: 0 for euler/pbad/pbad3, 5e-13 variational, 1e-8 nmdp, whose Newton stops at its
    tolerance).  nmdp needs as many Newton iterations as under g / 2 (75 over 25 steps of 50 ms):
    the force's derivative is in its Jacobian (of the wrong sign it needed 119)."""
    held, half, full = arms
    dt = 0.05 if method == "nmdp" else 0.02
    steps = int(round(0.5 / dt))
    (qa, _, na), (qb, _, nb) = (_steps(m, method, dt, steps, v0=V0) for m in (held, half))
    assert np.abs(qa[-1] - qb[-1]).max() < 1e-7, (qa[-1], qb[-1])
    assert na == nb  # None == None for the rollout methods
    if method == "nmdp":
        assert na > 0
    if method == "euler":  # not vacuous: under the full weight the arm is elsewhere
        qf, _, _ = _steps(full, method, dt, steps, v0=V0)
        assert np.abs(qf[-1] - qa[-1]).max() > 0.1


# ---------------------------------------------------------------------------------- ball/free springs

XML = """<mujoco><option gravity="0 0 {g}" integrator="{integ}" timestep="0.001"/>
<worldbody>
  <body name="base" pos="0.1 -0.2 1.0" quat="0.9 0.1 0.3 -0.2">
    <freejoint name="root"/>
    <geom type="box" size=".1 .15 .05" mass="2"/>
    <body name="arm" pos=".2 0 0"><joint name="shoulder" type="ball" stiffness="{k}" damping="0.02"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" mass="0.7"/>
      <body name="hand" pos=".3 0 0"><joint name="wrist" type="ball" stiffness="{k2}"/>
        <geom type="box" size=".05 .02 .08" pos="0.05 0 0" mass=".3"/></body>
    </body>
  </body>
</worldbody></mujoco>"""


def _xml(g=-9.81, integ="Euler", k=3.0, k2=1.5, free_k=None):
    x = XML.format(g=g, integ=integ, k=k, k2=k2)
    if free_k is not None:
        x = x.replace('<freejoint name="root"/>', f'<joint name="root" type="free" stiffness="{free_k}"/>')
    return x


def _random_q(mj, rng):
    q = mj.qpos0 + 0.0
    q[:3] += rng.normal(scale=0.3, size=3)
    for a in (3, 7, 11):  # the free joint's and the two balls' quaternions
        x = rng.normal(size=4)
        q[a : a + 4] = x / np.linalg.norm(x)
    return q


def test_spring_torque_equals_mujocos_qfrc_spring(tmp_path):
    """Ball joints and a free joint with a spring (translational and rotational, MuJoCo's): the
    passive torque at dt = 0 equals ``qfrc_spring`` at random states to 1e-12 (the free joint's
    linear DOFs rotated into its body frame, pbsim's)."""
    m, mj = mjcf_pair(tmp_path, "s.xml", _xml(free_k=4.0))
    assert not any("stiffness" in n for n in m.notes), m.notes
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(6):
        q = _random_q(mj, rng)
        d.qpos[:] = q
        mujoco.mj_forward(mj, d)
        ref = d.qfrc_spring.copy()
        ref[:3] = d.xmat[1].reshape(3, 3).T @ ref[:3]
        tau, arm = np.zeros(m.nv), np.zeros(m.nv)
        passive_torques(m.k, q, np.zeros(m.nv), 0.0, False, False, tau, arm)
        worst = max(worst, np.abs(tau - ref).max())
        assert np.abs(ref).max() > 1.0  # not vacuous
    assert worst < 1e-12, worst


def test_energy_gradient_is_the_spring_torque(tmp_path):
    """The energy the position-based steps minimise, by central differences along the tangent
    (``pbsim.integrate``), has the gradient ``ball_springs(scale=1)`` = minus the torque."""
    m, mj = mjcf_pair(tmp_path, "s.xml", _xml(free_k=4.0))
    q = _random_q(mj, np.random.default_rng(1))
    g = np.zeros(m.nv)
    ball_springs(m.k, q, 1.0, g)
    scratch = np.zeros(m.nv)
    eps = 1e-6

    def energy(x):
        return ball_springs(m.k, np.ascontiguousarray(x), 0.0, scratch)

    fd = np.array(
        [
            (energy(pbsim.integrate(m, q, eps * e)) - energy(pbsim.integrate(m, q, -eps * e))) / (2 * eps)
            for e in np.eye(m.nv)
        ]
    )
    assert np.abs(fd - g).max() < 1e-7 * max(1.0, np.abs(g).max()), (fd, g)
    assert np.abs(g).max() > 1.0


def _ball_pendulum(tmp_path, k=3.0, k2=1.5):
    """The two ball joints with springs, fixed base, tilted start: (model, MjModel, q0)."""
    xml = _xml(integ="RK4", k=k, k2=k2).replace('<freejoint name="root"/>', "")
    m, mj = mjcf_pair(tmp_path, f"p{k}.xml", xml)
    q0 = mj.qpos0.copy()
    q0[0:4] = [0.9, 0.3, 0.2, -0.1]
    q0[0:4] /= np.linalg.norm(q0[0:4])
    return m, mj, q0


def _mujoco_q(mj, q0, dt, steps):
    mj.opt.timestep = dt
    d = mujoco.MjData(mj)
    d.qpos[:] = q0
    for _ in range(steps):
        mujoco.mj_step(mj, d)
    return d.qpos.copy()


def test_ball_pendulum_follows_mujoco(tmp_path):
    """0.5 s under gravity, springs on both balls: rk4 at 1 ms within 1e-9 of MuJoCo's RK4 at 1 ms
    (the exact ODE); without the springs it ends far from it.  Euler converges to MuJoCo's RK4 at
    0.1 ms (the exact solution to 1e-6) at first order: its error halves with dt (ratio 1.6-2.4),
    0.05 at 1 ms.  That error is 30 times MuJoCo's Euler's (measured 0.052 against 0.0017), as for
    every pbsim spring: euler takes it in the stable-PD form ``-k (e + dt v+)``, stable at any dt,
    which adds the numerical damping ``k dt`` (the 40 rad/s wrist loses 2 % of its amplitude a
    radian), where MuJoCo's Euler takes it explicitly (symplectic, no amplitude error, unstable
    past ``w dt = 2``)."""
    m, mj, q0 = _ball_pendulum(tmp_path)
    ref = _mujoco_q(mj, q0, 1e-3, 500)
    tr = pbsim.rollout(m, "rk4", dt=1e-3, steps=500, q0=q0, scene=pbsim.Scene())
    assert np.abs(pbsim.difference(m, ref, tr.q[-1])).max() < 1e-9
    m0, _, _ = _ball_pendulum(tmp_path, 0.0, 0.0)
    far = pbsim.rollout(m0, "rk4", dt=1e-3, steps=500, q0=q0, scene=pbsim.Scene())
    assert np.abs(pbsim.difference(m, ref, far.q[-1])).max() > 0.1
    truth = _mujoco_q(mj, q0, 1e-4, 5000)
    err = [
        np.abs(
            pbsim.difference(m, truth, pbsim.rollout(m, "euler", dt=h, steps=n, q0=q0, scene=pbsim.Scene()).q[-1])
        ).max()
        for h, n in ((1e-3, 500), (5e-4, 1000))
    ]
    assert err[0] < 0.1 and 1.6 < err[0] / err[1] < 2.4, err


@pytest.mark.parametrize("method", ["pbad", "pbad3", "variational", "nmdp"])
def test_ball_springs_in_the_large_step_methods(tmp_path, method):
    """No gravity, a spring-only ball pendulum released 0.8 rad from its rest with joint damping:
    each method at 20 ms brings it back to rest (within 1e-2 rad after 5 s) and its energy never
    rises above its start -- the spring is in each method's step (potential, residual, DEL, the
    joint forces NMDP takes)."""
    xml = _xml(g=0, k=3.0, k2=1.5).replace('<freejoint name="root"/>', "")
    xml = xml.replace('damping="0.02"', 'damping="0.2"').replace(
        'stiffness="1.5"/>', 'stiffness="1.5" damping="0.05"/>'
    )
    m, mj = mjcf_pair(tmp_path, "z.xml", xml)
    q0 = mj.qpos0.copy()
    q0[0:4] = [np.cos(0.4), np.sin(0.4), 0.0, 0.0]  # 0.8 rad about x
    qs, vs, _ = _steps(m, method, 0.02, 250, q0=q0)
    rest = np.abs(pbsim.difference(m, mj.qpos_spring, qs[-1])).max()
    assert rest < 1e-2, rest
    scratch = np.zeros(m.nv)
    stored = np.array([ball_springs(m.k, np.ascontiguousarray(q), 0.0, scratch) for q in qs])
    kin = np.array([pbsim.energy(m, q, v)[0] for q, v in zip(qs, vs)])
    total = stored + kin
    assert stored[0] > 0.5 and total.max() <= total[0] * (1 + 1e-6), (total[0], total.max())
