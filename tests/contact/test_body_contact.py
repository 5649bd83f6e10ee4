"""Contact between bodies (issue 28): the one detection extended to shapes on bodies, against
MuJoCo (stack heights, the MJCF filter's pairs), analytic cases and finite differences.

Models are MJCF written here; MuJoCo (a dependency) is the oracle for rest heights."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
from pbsim.contact import make_scene
from pbsim.contact.query import env_sdf_points
from pbsim.contact.scene import make_kscene

FLOOR = '<geom name="floor" type="plane" size="5 5 0.1"/>'


def box_body(name, pos, half, mass, euler="0 0 0", extra=""):
    h = " ".join(str(x) for x in half)
    p = " ".join(str(x) for x in pos)
    return (
        f'<body name="{name}" pos="{p}" euler="{euler}"><freejoint/>'
        f'<geom name="{name}" type="box" size="{h}" mass="{mass}" {extra}/></body>'
    )


def mjcf(tmp_path, name, bodies, floor=True, option=""):
    xml = (
        f'<mujoco><option timestep="0.001" {option}/><worldbody>{FLOOR if floor else ""}'
        f'{"".join(bodies)}</worldbody></mujoco>'
    )
    p = tmp_path / f"{name}.xml"
    p.write_text(xml)
    return str(p)


def mujoco_rest(path, T=2.0):
    import mujoco

    mj = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(mj)
    while d.time < T:
        mujoco.mj_step(mj, d)
    return np.array(d.qpos)


# stacks with aligned and yawed boxes, each box centered on the one below (an offset stack leans on
# the soft floor: test_offset_stack_...)
STACK2 = [
    box_body("b1", (0, 0, 0.1), (0.1, 0.1, 0.1), 1.0),
    box_body("b2", (0, 0, 0.32), (0.1, 0.1, 0.1), 1.0, euler="0 0 20"),
]
STACK3 = [
    box_body("b1", (0, 0, 0.1), (0.1, 0.1, 0.1), 1.0),
    box_body("b2", (0, 0, 0.29), (0.08, 0.08, 0.08), 0.6, euler="0 0 30"),
    box_body("b3", (0, 0, 0.45), (0.06, 0.06, 0.06), 0.3, euler="0 0 -15"),
]
STACK_ALIGNED = [
    box_body("b1", (0, 0, 0.1), (0.1, 0.1, 0.1), 1.0),
    box_body("b2", (0, 0, 0.32), (0.1, 0.1, 0.1), 1.0),
]

# the methods with contact between bodies, at the steps the issue names
STACK_RUNS = [
    ("euler", 0.002),
    ("pbad", 0.02),
    ("pbad", 0.05),
    ("pbfd", 0.02),
    ("pbfd", 0.05),
    ("pbad3", 0.02),
    ("pbad4", 0.05),
]


@pytest.mark.parametrize("integ,dt", STACK_RUNS)
@pytest.mark.parametrize("stack", ["two", "three", "aligned"])
def test_box_stacks_rest_at_mujocos_heights(tmp_path, integ, dt, stack):
    """Two- and three-box stacks (the issue's first example: before, both boxes sank into each other
    onto the floor): rest heights within 1 cm of MuJoCo's after 2 s, no jitter above 1 mm over the
    last 0.5 s, the boxes never inside each other by more than the 5 cm the scene allows."""
    bodies = {"two": STACK2, "three": STACK3, "aligned": STACK_ALIGNED}[stack]
    path = mjcf(tmp_path, stack, bodies)
    m = pbsim.load(path)
    sc = make_scene(m)
    assert sc.kernel_arrays(m).nitem > 0
    T = 2.0
    tr = pbsim.rollout(m, integ, dt=dt, steps=int(round(T / dt)), q0=m.default_configuration(), scene=sc)
    nbox = len(bodies)
    z = tr.q[:, [7 * i + 2 for i in range(nbox)]]
    ref = mujoco_rest(path, T)[[7 * i + 2 for i in range(nbox)]]
    assert np.all(np.abs(z[-1] - ref) < 0.01), (z[-1], ref)
    last = z[int(round(1.5 / dt)) :]
    assert np.ptp(last, axis=0).max() < 1e-3, np.ptp(last, axis=0)
    assert float(tr.diagnostics.penetration.max()) < 0.05 if hasattr(tr, "diagnostics") else True


def test_offset_stack_holds_with_coulomb_friction_and_creeps_with_viscous_friction(tmp_path):
    """An upper box 1 cm off the lower one's centre loads it off-centre, so the stack leans on the
    soft floor (~2 mrad) and the upper box sits on a slope.  Coulomb friction (euler's regularised
    law) holds it; PBAD's Eq. 9 and PBFD's friction are velocity-dependent drags with no static
    friction (paper 000 Sec. 6.2, paper 003 Sec. IV), so it creeps down the slope, faster the larger
    dt for Eq. 9 (its tangential damping 2 D2 d^2 / dt falls as 1/dt) -- the lean grows with the
    offset and the stack eventually topples (PBAD at 50 ms: after ~2.3 s).  Measured here: the
    upper box's drift over the last 0.5 s of 2 s."""
    bodies = [box_body("b1", (0, 0, 0.1), (0.1, 0.1, 0.1), 1.0), box_body("b2", (0.01, 0, 0.32), (0.1, 0.1, 0.1), 1.0)]
    path = mjcf(tmp_path, "offset", bodies)
    m = pbsim.load(path)
    drift = {}
    for integ, dt in (("euler", 0.002), ("pbad", 0.02), ("pbad", 0.05)):
        tr = pbsim.rollout(
            m, integ, dt=dt, steps=int(round(2.0 / dt)), q0=m.default_configuration(), scene=make_scene(m)
        )
        drift[integ, dt] = float(np.ptp(tr.q[int(round(1.5 / dt)) :, 7]))
    assert drift["euler", 0.002] < 1e-3, drift
    assert 1e-3 < drift["pbad", 0.02] < 0.02, drift
    assert drift["pbad", 0.05] > 2 * drift["pbad", 0.02], drift


def test_without_body_contact_the_boxes_fall_into_each_other(tmp_path):
    """The negative control: ``body_contact=False`` is the environment-only contact of before."""
    path = mjcf(tmp_path, "two", STACK2)
    m = pbsim.load(path)
    tr = pbsim.rollout(
        m, "euler", dt=0.002, steps=500, q0=m.default_configuration(), scene=make_scene(m, body_contact=False)
    )
    assert tr.q[-1, 9] < 0.11  # the top box on the floor, inside the bottom one


def test_box_dropped_onto_a_box_at_50ms_does_not_tunnel(tmp_path):
    """A 0.2 m box dropped 0.5 m onto another at dt 0.05 (3.1 m/s at impact: 16 cm per step, more
    than the box is thick) stays on top: the swept step limit and the limited initial guess."""
    bodies = [box_body("b1", (0, 0, 0.1), (0.1, 0.1, 0.1), 1.0), box_body("b2", (0, 0, 0.8), (0.1, 0.1, 0.1), 1.0)]
    path = mjcf(tmp_path, "drop", bodies)
    m = pbsim.load(path)
    for integ in ("pbad", "pbfd"):
        tr = pbsim.rollout(m, integ, dt=0.05, steps=30, q0=m.default_configuration(), scene=make_scene(m))
        gap = tr.q[:, 9] - tr.q[:, 2]
        assert gap.min() > 0.2 - 0.02, (integ, gap.min())
        assert abs(tr.q[-1, 9] - 0.3) < 0.01, (integ, tr.q[-1, 9])


def test_environment_mask_selects_shapes_exactly(rng):
    """``env_sdf``'s mask (the contact rules' per-point filter): with every bit set it is the union
    of all shapes; with some bits it equals, bit for bit, the union of only those shapes."""
    from pbsim.contact import Box, Capsule, Plane, Sphere
    from pbsim.contact.environment import pack_environment, packed_order

    env = [
        Sphere([0.3, 0, 0], 0.2),
        Plane([0, 0, 1], -0.1),
        Box([0.1, 0.2, 0.1], p=[0, 0.5, 0]),
        Capsule([0, 0, 0.3], [0.4, 0, 0.3], 0.05),
        Plane([0.2, 0, 1], 0.0),
    ]
    X = rng.uniform(-1, 1, (400, 3))

    def query(items, mask=None):
        ks = make_kscene(
            0,
            np.zeros(0, np.int32),
            np.zeros((0, 3)),
            np.zeros(0),
            np.zeros(0),
            np.zeros(0),
            0.8,
            0.01,
            pack_environment(items),
        )
        if mask is not None:
            ks = ks._replace(env_all=np.array([mask], np.int64))
        out = np.zeros((len(X), 4))
        env_sdf_points(ks, np.ascontiguousarray(X), out)
        return out

    order = packed_order(env)
    for keep in ([0, 2], [1], [1, 3, 4], [0, 1, 2, 3, 4]):
        mask = sum(1 << order[i] for i in keep)
        assert np.array_equal(query(env, mask), query([env[i] for i in keep]))


def test_pair_forces_obey_newtons_third_law(tmp_path):
    """Penalty forces between two free boxes, as generalized forces, are a world wrench and its
    opposite: the bodies' world wrenches sum to zero (round-off)."""
    from pbsim.contact.penalty import pair_generalized_forces
    from pbsim.dynamics.kinematics import velocity_pass, world_pass
    from pbsim.dynamics.workspace import work_for

    bodies = [
        box_body("b1", (0, 0, 0.0), (0.1, 0.1, 0.1), 1.0, euler="5 10 15"),
        box_body("b2", (0.05, 0.02, 0.18), (0.1, 0.08, 0.06), 2.0, euler="-20 5 30"),
    ]
    m = pbsim.load(mjcf(tmp_path, "third", bodies, floor=False))
    ks = make_scene(m, ground=None).kernel_arrays(m)
    q = m.default_configuration()
    v = np.random.default_rng(3).normal(size=m.nv)
    w = work_for(m, 1)
    velocity_pass(m.k, w, 0, q, v)
    world_pass(m.k, w, 0)
    tau = np.zeros(m.nv)
    pair_generalized_forces(m.k, ks, w, 0, q, v, tau)
    assert np.abs(tau).max() > 1.0  # they touch
    total = np.zeros(6)
    for i in range(2):
        R, p = w.Rw[0, i], w.pw[0, i]
        f = R @ tau[6 * i : 6 * i + 3]  # free joint: body-frame linear force, body-frame torque
        t = R @ tau[6 * i + 3 : 6 * i + 6] + np.cross(p, f)
        total += np.r_[f, t]
    assert np.abs(total).max() < 1e-12 * np.abs(tau).max()


# a tree whose two branches touch (their lowest common ancestor is the free base, not the world),
# ball joints, and a free box touching one hand: every case of the relative Jacobian's walks
TREE = """<mujoco><worldbody>
  <body name="base" pos="0 0 1"><freejoint/>
    <geom type="box" size="0.1 0.1 0.05" contype="0" conaffinity="0" mass="2"/>
    <body name="armL" pos="0.1 0 0"><joint name="jl" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" contype="0" conaffinity="0"/>
      <body name="handL" pos="0.2 0 0"><joint name="bl" type="ball"/>
        <geom name="hl" type="box" size="0.05 0.04 0.03" pos="0.05 0 0"/></body></body>
    <body name="armR" pos="0.1 0 0.1"><joint name="jr" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" contype="0" conaffinity="0"/>
      <body name="handR" pos="0.2 0 0"><joint name="br" type="ball"/>
        <geom name="hr" type="box" size="0.05 0.04 0.03" pos="0.05 0 0"/></body></body>
  </body>
  <body name="free" pos="0.35 0.0 0.94" euler="0.1 0.2 0.3"><freejoint/>
    <geom name="fb" type="box" size="0.06 0.05 0.04"/></body>
</worldbody></mujoco>"""


def _tree(tmp_path):
    p = tmp_path / "tree.xml"
    p.write_text(TREE)
    m = pbsim.load(str(p))
    q = m.default_configuration()
    q[m.idx_q("jr")] = 0.3  # the right hand pressed onto the left one; the free box overlaps the left
    return m, q, np.random.default_rng(1).normal(size=m.nv) * 0.3


def _tangent_fd(m, f, q, eps=1e-6):
    """Central differences of the tangent gradient ``f(q)`` (the chart correction of pbad_fd)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrators"))
    from pbad_fd import chart_gradient

    J = np.zeros((m.nv, m.nv))
    for a in range(m.nv):
        d = np.zeros(m.nv)
        d[a] = eps
        J[:, a] = (
            chart_gradient(m, d, f(pbsim.integrate(m, q, d))) - chart_gradient(m, -d, f(pbsim.integrate(m, q, -d)))
        ) / (2 * eps)
    return J


@pytest.mark.parametrize("mu", [0.0, 0.8])
def test_pbad_pair_terms_match_finite_differences(tmp_path, mu):
    """PBAD's objective with the body-body terms: gradient (and, frictionless, the exact Hessian:
    with friction Eq. 9's Hessian is PSD-projected while sliding, as in the environment) against
    central differences, 1e-6 relative; the terms never touch the DOFs above the lowest common
    ancestor (the base: its rows equal the contact-free objective's exactly)."""
    import pbsim.integrators as I
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrators"))
    from pbad_fd import fd_check

    m, q, v = _tree(tmp_path)
    integ = I.make("pbad", m, make_scene(m, ground=None, mu=mu))
    free = I.make("pbad", m, make_scene(m, ground=None, body_contact=False))
    rng = np.random.default_rng(2)
    for _ in range(2):
        qe = pbsim.integrate(m, q, rng.normal(size=m.nv) * 0.01)
        f = lambda qq: tuple(a[0] for a in integ.objective(q, v, qq, 0.02, exact=True))  # noqa: E731
        E, g, _ = f(qe)
        E0, g0, _ = (a[0] for a in free.objective(q, v, qe, 0.02, exact=True))
        assert E - E0 > 1.0  # the hands and the box press into each other
        eg, eh = fd_check(m, f, qe)
        assert eg < 1e-6, eg
        if mu == 0.0:
            assert eh < 1e-6, eh
    # the free box lifted away: the hands' contact alone, whose lowest common ancestor is the base
    qa = q.copy()
    qa[m.idx_q("free_joint0").start + 2] += 1.0
    E, g, H = (a[0] for a in integ.objective(q, v, qa, 0.02, exact=True))
    E0, g0, H0 = (a[0] for a in free.objective(q, v, qa, 0.02, exact=True))
    assert E - E0 > 1.0 and np.abs(g - g0).max() > 1.0
    assert np.array_equal(g[:6], g0[:6]) and np.array_equal(H[:6], H0[:6]) and np.array_equal(H[:, :6], H0[:, :6])


@pytest.mark.parametrize("mu", [0.0, 0.8])
@pytest.mark.parametrize("name", ["pbad3", "pbad4"])
def test_collocation_pair_terms_match_finite_differences(tmp_path, name, mu):
    """PBAD orders 3-4 between bodies: the collocation residual's Jacobian (Eq. 9's force at every
    node with the velocity relative to B from the polynomial, the normal damper; blocks across nodes
    through both nodes' relative Jacobians and B's turn between them) against central differences
    (1e-6 relative; measured 1e-10); the body-body part is a sizeable part of J."""
    import pbsim.integrators as I

    m, q, _ = _tree(tmp_path)
    integ = I.make(name, m, make_scene(m, ground=None, mu=mu))
    rng = np.random.default_rng(0)
    v, dt = rng.normal(size=m.nv) * 0.3, 0.02
    nodes = np.array(
        [pbsim.integrate(m, q, integ.tau[j] * dt * v + 0.002 * rng.normal(size=m.nv)) for j in range(integ.order + 1)]
    )[None]
    _, J = integ.residual(nodes, dt)
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrators"))
    from pbad_fd import colloc_fd_jacobian

    Jf = colloc_fd_jacobian(m, integ, nodes, dt)
    assert np.abs(J[0] - Jf).max() < 1e-6 * np.abs(Jf).max()
    _, J0 = I.make(name, m, make_scene(m, ground=None, body_contact=False)).residual(nodes, dt)
    assert np.abs(J[0] - J0[0]).max() > 0.05 * np.abs(Jf).max()


@pytest.mark.parametrize("method", ["pbfd", "pbd_friction"])
def test_pbfd_pair_residual_jacobian_matches_finite_differences(tmp_path, method):
    """PBFD's residual Jacobian (non-symmetric with friction) and pbd_friction's energy Hessian
    with the body-body terms: exact against central differences (1e-6 relative), box faces being
    flat."""
    import pbsim.integrators as I

    m, q, v = _tree(tmp_path)
    integ = I.make(method, m, make_scene(m, ground=None, mu=0.8))
    qe = pbsim.integrate(m, q, np.random.default_rng(3).normal(size=m.nv) * 0.01)
    _, r, J = (a[0] for a in integ.residual(q, v, qe, 0.02))
    Jf = _tangent_fd(m, lambda qq: integ.residual(q, v, qq, 0.02, jacobian=False)[1][0], qe)
    assert np.abs(r).max() > 1.0
    assert np.abs(J - Jf).max() / np.abs(Jf).max() < 1e-6


def _servo_mujoco(path, q_ref, kp, kd, T, dt=0.002):
    """MuJoCo's run of ``path`` with every actuator turned into a PD servo (kp, kd on its joint,
    implicit in the velocity: MuJoCo's implicitfast) holding ``q_ref``; returns qpos after T."""
    import mujoco

    mj = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(mj)
    g = mj.actuator_gear[:, 0].copy()
    mj.actuator_gaintype[:] = 0
    mj.actuator_biastype[:] = 1
    mj.actuator_gainprm[:, 0] = kp / g**2
    mj.actuator_biasprm[:, 1] = -kp / g**2
    mj.actuator_biasprm[:, 2] = -kd / g**2
    mj.actuator_ctrllimited[:] = 0
    mj.actuator_forcelimited[:] = 0
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    mj.opt.timestep = dt
    d.ctrl[:] = g * np.asarray(q_ref)[mj.jnt_qposadr[mj.actuator_trnid[:, 0]]]
    while d.time < T:
        mujoco.mj_step(mj, d)
    return np.array(d.qpos)


def test_mjx_humanoid_stands_on_its_four_foot_pairs():
    """MJX's humanoid test model: body geoms contype=conaffinity=0, four foot-floor <pair>s (before:
    no contact points at all, it fell through its floor to z = -3.7 m in 1 s).  Held by stable PD:
    contact points on the four feet only, no foot deeper than 5 mm, the torso within 3 cm of
    MuJoCo's height after 2 s (MuJoCo with the same PD as implicit servos)."""
    from conftest import mjx_test_data

    path = mjx_test_data("humanoid/humanoid.xml")
    m = pbsim.load(path)
    sc = make_scene(m)
    assert sorted({m.geoms[g].name for g in sc.points.geom}) == [
        "foot1_left",
        "foot1_right",
        "foot2_left",
        "foot2_right",
    ]
    assert sc.kernel_arrays(m).nitem == 0
    q0 = m.default_configuration()
    kp = np.full(m.nv, 2000.0)
    kd = np.full(m.nv, 100.0)
    kp[:6] = kd[:6] = 0.0  # the free root is not actuated
    ctrl = pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=q0)
    ref = _servo_mujoco(path, q0, 2000.0, 100.0, 2.0, dt=0.005)[2]
    for integ, dt in (("pbad", 0.005), ("pbad", 0.02), ("euler", 0.002)):
        tr = pbsim.rollout(m, integ, dt=dt, steps=int(round(2.0 / dt)), q0=q0, scene=sc, control=ctrl)
        assert tr.info["max_penetration"] < 0.005, (integ, dt, tr.info["max_penetration"])
        assert abs(tr.q[-1, 2] - ref) < 0.03, (integ, dt, tr.q[-1, 2], ref)


def _fixed_humanoid(tmp_path):
    """gymnasium's humanoid with its root welded to the world (MuJoCo's humanoid self-collides:
    contype = conaffinity = 1, parent-child pairs filtered)."""
    from conftest import gymnasium_xml

    src = open(gymnasium_xml("humanoid.xml")).read()
    root = '<joint armature="0" damping="0" limited="false" name="root" pos="0 0 0" stiffness="0" type="free"/>'
    assert root in src
    p = tmp_path / "humanoid_fixed.xml"
    p.write_text(src.replace(root, ""))
    return str(p)


def test_humanoid_arm_driven_into_its_body_stops_there(tmp_path):
    """The right arm servoed to a pose that puts the hand 9 cm inside the pelvis ('butt'): without
    contact between bodies it goes there; with it the forearm and hand stop on the pelvis (depth <=
    1 cm, as MuJoCo's contacts there) and the arm's joint angles agree with MuJoCo's within 10 deg
    (euler at 2 ms, pbad and pbfd at 20 ms)."""
    path = _fixed_humanoid(tmp_path)
    m = pbsim.load(path)
    q0 = m.default_configuration()
    qt = q0.copy()
    arm = [m.idx_q(j).start for j in ("right_shoulder1", "right_shoulder2", "right_elbow")]
    qt[arm] = np.radians([60.0, -60.0, -30.0])
    ctrl = pbsim.Control(mode="spd", kp=100.0, kd=10.0, q_ref=qt)
    ref = np.degrees(_servo_mujoco(path, qt, 100.0, 10.0, 2.0)[arm])
    tr = pbsim.rollout(m, "euler", dt=0.002, steps=1000, q0=q0, scene=make_scene(m, body_contact=False), control=ctrl)
    assert np.abs(np.degrees(tr.q[-1, arm]) - np.degrees(qt[arm])).max() < 3.0  # it reaches its target ...
    assert _pair_depth(m, make_scene(m), tr.q[-1]) > 0.03  # ... inside the pelvis
    for integ, dt in (("euler", 0.002), ("pbad", 0.02), ("pbfd", 0.02)):
        sc = make_scene(m)
        tr = pbsim.rollout(m, integ, dt=dt, steps=int(round(2.0 / dt)), q0=q0, scene=sc, control=ctrl)
        assert _pair_depth(m, sc, tr.q[-1]) < 0.01, integ
        assert np.abs(np.degrees(tr.q[-1, arm]) - ref).max() < 10.0, (integ, np.degrees(tr.q[-1, arm]), ref)


def _pair_depth(m, sc, q):
    """The deepest body-body point at configuration q (the rollout's penetration diagnostic)."""
    from pbsim.contact.depth import max_pair_depth

    X = pbsim.forward_kinematics(m, q)
    return max_pair_depth(sc.kernel_arrays(m), np.ascontiguousarray(X[:, :3, :3]), np.ascontiguousarray(X[:, :3, 3]))


PUSH = """<mujoco><option timestep="0.002" integrator="implicitfast"/><worldbody>
<geom name="floor" type="plane" size="5 5 0.1"/>
<body name="l1" pos="0 0 0.06"><joint name="j1" type="hinge" axis="0 0 1" damping="1"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" contype="2" conaffinity="2" mass="1"/>
  <body name="l2" pos="0.3 0 0"><joint name="j2" type="hinge" axis="0 0 1" damping="1"/>
    <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.03" contype="2" conaffinity="2" mass="0.8"/>
    <body name="l3" pos="0.25 0 0"><joint name="j3" type="hinge" axis="0 0 1" damping="1"/>
      <geom name="tip" type="capsule" fromto="0 0 0 0.15 0 0" size="0.03" contype="2" conaffinity="2" mass="0.5"/>
    </body></body></body>
<body name="box" pos="0.45 0.25 0.05"><freejoint/>
  <geom name="box" type="box" size="0.05 0.05 0.05" mass="0.5" contype="3" conaffinity="3"/></body>
</worldbody>
<actuator><position joint="j1" kp="20" kv="20"/><position joint="j2" kp="20" kv="5"/><position joint="j3" kp="10" kv="2"/>
</actuator></mujoco>"""


def test_fixed_base_arm_pushes_a_free_box_as_mujoco_does(tmp_path):
    """A 3-link capsule arm (fixed base, its links touching the box but not the floor: contype 2)
    servoed to sweep 90 deg through a 0.5 kg box on the floor: the box moves as in MuJoCo (same
    direction, distance within 25 %; euler's regularised Coulomb friction, MuJoCo's elliptic cone,
    mu = 1 both); without contact between bodies the arm passes through and the box stays."""
    import mujoco

    p = tmp_path / "push.xml"
    p.write_text(PUSH)
    m = pbsim.load(str(p))
    qt = m.default_configuration()
    qt[m.idx_q("j1")] = np.radians(90.0)
    kp, kd = np.zeros(m.nv), np.zeros(m.nv)
    for j, a, b in (("j1", 20, 20), ("j2", 20, 5), ("j3", 10, 2)):
        kp[m.idx_v(j)], kd[m.idx_v(j)] = a, b
    ctrl = pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=qt)
    mj = mujoco.MjModel.from_xml_path(str(p))
    d = mujoco.MjData(mj)
    d.ctrl[:] = qt[:3]
    while d.time < 3.0:
        mujoco.mj_step(mj, d)
    box = m.idx_q("box_joint0").start
    start = m.default_configuration()[box : box + 2]
    ref = d.qpos[box : box + 2] - start
    assert np.linalg.norm(ref) > 0.3
    tr = pbsim.rollout(
        m, "euler", dt=0.002, steps=1500, q0=m.default_configuration(), scene=make_scene(m, mu=1.0), control=ctrl
    )
    got = tr.q[-1, box : box + 2] - start
    cos = got @ ref / (np.linalg.norm(got) * np.linalg.norm(ref))
    assert cos > np.cos(np.radians(10.0)), (got, ref)
    assert abs(np.linalg.norm(got) / np.linalg.norm(ref) - 1.0) < 0.25, (got, ref)
    tr = pbsim.rollout(
        m,
        "euler",
        dt=0.002,
        steps=1500,
        q0=m.default_configuration(),
        scene=make_scene(m, mu=1.0, body_contact=False),
        control=ctrl,
    )
    assert np.linalg.norm(tr.q[-1, box : box + 2] - start) < 1e-3


FOLD_URDF = """<robot name="fold">
  <link name="base"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  <joint name="j0" type="fixed"><parent link="world_link"/><child link="base"/></joint>
  <link name="world_link"/>
  {links}
</robot>"""


def _fold_urdf(tmp_path):
    links = []
    parent = "base"
    for i in range(1, 4):
        links.append(
            f'<link name="l{i}"><inertial><mass value="1"/><origin xyz="0.15 0 0"/>'
            f'<inertia ixx="0.001" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
            f'<collision><origin xyz="0.15 0 0"/><geometry><box size="0.24 0.06 0.06"/></geometry></collision></link>'
            f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
            f'<origin xyz="{0.05 if i == 1 else 0.3} 0 0"/><axis xyz="0 0 1"/>'
            f'<limit lower="-3" upper="3" effort="100" velocity="10"/></joint>'
        )
        parent = f"l{i}"
    p = tmp_path / "fold.urdf"
    p.write_text(FOLD_URDF.format(links="".join(links)))
    return str(p)


def test_urdf_self_collision_is_pybullets_flag(tmp_path):
    """URDF self-collision (pybullet's convention): off by default, the folding arm's third link
    passes through the first; with ``self_collision=True`` (non-adjacent links; pairs touching at
    the default configuration dropped and named) it stops on it, for euler and pbad."""
    m = pbsim.load(_fold_urdf(tmp_path), floating_base=False)
    assert make_scene(m, ground=None).kernel_arrays(m).nitem == 0
    sc = make_scene(m, ground=None, self_collision=True)
    bp = sc.body_pairs(m)
    bodies = {frozenset((m.geoms[a].body, m.geoms[b].body)) for a, b in bp.item_geoms}
    assert bodies == {frozenset((0, 2))}  # l1-l3 only: l1-l2, l2-l3 are parent-child
    q0 = m.default_configuration()
    qt = q0.copy()
    qt[m.idx_q("j2")] = np.radians(150.0)
    qt[m.idx_q("j3")] = np.radians(150.0)  # folds l3 back across l1
    ctrl = pbsim.Control(mode="spd", kp=5.0, kd=1.0, q_ref=qt)  # ~90 N at l3 against l1: a few mm deep
    m.gravity[:] = 0.0
    for integ, dt in (("euler", 0.002), ("pbad", 0.02)):
        free = pbsim.rollout(
            m, integ, dt=dt, steps=int(round(1.5 / dt)), q0=q0, scene=make_scene(m, ground=None), control=ctrl
        )
        hit = pbsim.rollout(m, integ, dt=dt, steps=int(round(1.5 / dt)), q0=q0, scene=sc, control=ctrl)
        assert _pair_depth(m, sc, free.q[-1]) > 0.02, integ
        assert _pair_depth(m, sc, hit.q[-1]) < 0.01, integ
    # an overlap at the default configuration: the pair is dropped and named
    qd = q0.copy()
    qd[m.idx_q("j2")] = qd[m.idx_q("j3")] = np.radians(170.0)
    m.q_default = qd
    with pytest.warns(pbsim.PbsimWarning, match="already touching"):
        sc2 = make_scene(m, ground=None, self_collision=True)
    assert sc2.body_pairs(m) is None and "already touching" in sc2.notes[0]


def test_combined_robot_and_objects_touch_each_other(tmp_path):
    """``pbsim.combine``: a ball dropped on an MJCF two-box stack rests on it (the file's own pairs
    plus the ball against every shape that may collide, its floor included); a box dropped on a
    URDF arm (pbsim's rules: parts of a combined model always touch) lands on it first; repeated
    names get a prefix; a later part's actuators are refused by name."""
    path = mjcf(tmp_path, "stack", STACK2)
    ball = pbsim.free_object("sphere", (0.05,), 0.2, "ball")
    m = pbsim.combine(pbsim.load(path), (ball, (0.0, 0.0, 0.8)))
    assert m.body_names[-1] == "ball" and m.nq == 21
    tr = pbsim.rollout(m, "euler", dt=0.002, steps=1000, q0=m.default_configuration(), scene=make_scene(m))
    assert abs(tr.q[-1, 16] - 0.445) < 0.01, tr.q[-1, 16]  # on the top box (0.4) + its radius
    arm = pbsim.load(_fold_urdf(tmp_path), floating_base=False)
    two = pbsim.combine(arm, (pbsim.free_object("box", (0.03, 0.03, 0.03), 0.2, "l1"), (0.2, 0.0, 0.3)))
    assert two.body_names[-1] == "l1/l1"  # the arm has an l1 already: the part's name as prefix
    sc = make_scene(two, ground="plane")
    assert {frozenset((two.geoms[a].body, two.geoms[b].body)) for a, b in sc.body_pairs(two).item_geoms} == {
        frozenset((i, 3)) for i in range(3)
    }
    tr = pbsim.rollout(two, "pbad", dt=0.02, steps=25, q0=two.default_configuration(), scene=sc)
    assert tr.q[:, -5].max() < 0.3 + 1e-9 and tr.q[-1, -5] > 0.05  # caught by the arm (lying at z = 0)
    motor = tmp_path / "motor.xml"
    motor.write_text(
        '<mujoco><worldbody><body><joint name="h"/><geom size="0.1" mass="1"/></body></worldbody>'
        '<actuator><motor joint="h"/></actuator></mujoco>'
    )
    with pytest.raises(pbsim.InputError, match="actuators"):
        pbsim.combine(ball, pbsim.load(str(motor)))


def test_body_contact_cuda_twins_match_cpu_under_cudasim(tmp_path):
    """The step kernels with contact between bodies through the CUDA backend (numba's simulator in
    a subprocess) equal the CPU integrators' steps: euler, pbad and pbfd (both GPU schedules), a
    yawed box pressed onto another (_cudasim_body.py)."""
    from pathlib import Path

    from conftest import run_cudasim_twin

    diffs, out = run_cudasim_twin(Path(__file__).with_name("_cudasim_body.py"), tmp_path / "body_cpu.npz")
    assert len(diffs) == 15, out
    assert max(diffs.values()) <= 1e-10, diffs
    assert out.count(" same") == 5, out


def test_euler_gripper_holds_and_slips_by_coulombs_bound(tmp_path):
    """A two-finger gripper (_body_models.gripper: fingers PD-squeezed with F each, the base lifted
    0.1 m) with euler's regularised Coulomb friction (mu = 0.5): the box rises with the base when
    2 mu F = 1.6 m g (its creep, eps tau / sqrt(1 - tau^2) at the tangential load ratio tau, a few
    mm), and stays on the floor when 2 mu F = 0.4 m g."""
    from _body_models import BOX_MASS, gripper, gripper_lift

    m = pbsim.load(gripper(tmp_path, mu=0.5))
    sc = make_scene(m, mu=0.5)
    for ratio, holds in ((1.6, True), (0.4, False)):
        F = ratio * BOX_MASS * 9.81 / (2 * 0.5)
        base, box, slip, _ = gripper_lift(m, "euler", 0.001, F, scene=sc)
        assert base > 0.099
        if holds:
            assert box > 0.08, (ratio, box)
        else:
            assert box < 0.01, (ratio, box)


@pytest.mark.parametrize("deg", [35.0, 15.0])
def test_euler_box_slides_on_a_tilted_box_as_coulomb_says(tmp_path, deg):
    """A box on a tilted slab (a geom of a heavy free body, _body_models.ramp; mu = 0.5: tan^-1 mu
    = 26.6 deg): at 35 deg it accelerates at g (sin th - mu cos th) = 1.61 m/s^2 (within 10 %); at
    15 deg it sticks up to the regularised law's creep eps tau / sqrt(1 - tau^2) = 6.4 mm/s (tau =
    tan th / mu)."""
    from _body_models import ramp, slide_along

    path, _, down = ramp(tmp_path, deg, mu=0.5)
    m = pbsim.load(path)
    tr = pbsim.rollout(m, "euler", dt=0.001, steps=1000, q0=m.default_configuration(), scene=make_scene(m, mu=0.5))
    s, t = slide_along(tr, down), tr.t
    th = np.radians(deg)
    if deg > 26.6:
        a = 2.0 * np.polyfit(t[300:], s[300:], 2)[0]
        assert abs(a / (9.81 * (np.sin(th) - 0.5 * np.cos(th))) - 1.0) < 0.1, a
    else:
        tau = np.tan(th) / 0.5
        creep = 0.01 * tau / np.sqrt(1 - tau**2)
        speed = (s[-1] - s[-101]) / (t[-1] - t[-101])
        assert abs(speed - creep) < 0.2 * creep, (speed, creep)


def test_a_flat_mesh_between_bodies_is_refused_by_name(tmp_path):
    """A mesh that has no convex hull to collide with (a single triangle) on a body that touches
    another: a ContactInputError naming the geom, not a failure deep inside qhull."""
    (tmp_path / "flat.obj").write_text("v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nf 1 2 3\n")
    link = (
        '<link name="{n}"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" '
        'iyz="0"/></inertial><collision><geometry><mesh filename="flat.obj"/></geometry></collision></link>'
    )
    urdf = (
        '<robot name="flat">'
        + link.format(n="a")
        + link.format(n="b")
        + link.format(n="c")
        + '<joint name="j1" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        '<joint name="j2" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>'
    )
    (tmp_path / "flat.urdf").write_text(urdf)
    m = pbsim.load(str(tmp_path / "flat.urdf"))
    from pbsim.contact.environment import ContactInputError

    with pytest.raises(ContactInputError, match="convex hull"):
        make_scene(m, ground=None, self_collision=True, initial_overlaps="keep").kernel_arrays(m)
