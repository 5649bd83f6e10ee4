"""Analytic RNEA derivatives and the kinetic-energy gradient (pbsim.rnea_derivatives,
pbsim.kinetic_energy_gradient) against Pinocchio's computeRNEADerivatives and central finite
differences along pbsim's tangent ``q (+) dq`` (notes/pbfd_nmdp.md B-T1)."""

import numpy as np
import pytest

import pbsim
import pbsim_models
from conftest import pybullet_file
from oracles import PinOracle
from pbsim.dynamics.joints import BALL, FREE, PRISMATIC, REVOLUTE
from pbsim.model import JointSpec, LinkSpec, ModelBuilder

TOL_PIN = 1e-9  # relative, against Pinocchio
TOL_FD = 1e-6  # relative, against central differences (B-T1)
N_STATES = 5


def _rot(rng):
    A, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return A * np.sign(np.linalg.det(A))


def _link(rng, name):
    m = rng.uniform(0.3, 2.0)
    d = rng.uniform(0.05, 0.4, 3)
    I = m / 12 * np.diag([d[1] ** 2 + d[2] ** 2, d[0] ** 2 + d[2] ** 2, d[0] ** 2 + d[1] ** 2])
    R = _rot(rng)
    return LinkSpec(name, m, rng.uniform(-0.1, 0.1, 3), R @ I @ R.T)


def _random_tree(types, parents, floating, seed):
    """A tree of random links; joint k of type ``types[k]`` hangs link k+1 from link ``parents[k]``
    (0 = the base), at a random placement, about a random axis, with random armature."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder(f"random_{'floating' if floating else 'fixed'}_{seed}")
    b.add_link(_link(rng, "link0"))
    for k, (t, par) in enumerate(zip(types, parents)):
        b.add_link(_link(rng, f"link{k + 1}"))
        axis = rng.normal(size=3)
        b.add_joint(
            JointSpec(
                f"j{k}",
                t,
                f"link{par}",
                f"link{k + 1}",
                R=_rot(rng),
                p=rng.uniform(-0.3, 0.3, 3),
                axis=axis / np.linalg.norm(axis),
                armature=float(rng.uniform(0, 0.1)),
            )
        )
    return b.build(floating_base=floating)


def prismatic_tree():
    """Fixed base, revolute and prismatic joints on a branched tree."""
    types = ["prismatic", "revolute", "prismatic", "revolute", "prismatic", "revolute", "prismatic"]
    return _random_tree(types, [0, 1, 2, 1, 4, 0, 6], floating=False, seed=7)


def floating_mixed():
    """Free base, ball, prismatic and revolute joints, and a second free joint below the root."""
    types = ["ball", "prismatic", "revolute", "ball", "free", "revolute", "ball", "prismatic"]
    return _random_tree(types, [0, 1, 2, 0, 4, 5, 1, 7], floating=True, seed=11)


class PinBuilt:
    """Pinocchio model built joint by joint from a pbsim Model's own arrays (no file): covers
    every joint type pbsim has (ball joints and non-root free joints included)."""

    def __init__(self, model):
        import pinocchio as pin

        self.pin, self.m = pin, model
        pm = pin.Model()
        for i in range(model.nb):
            t = int(model.jtype[i])
            jm = (
                pin.JointModelRevoluteUnaligned(model.axis[i])
                if t == REVOLUTE
                else pin.JointModelPrismaticUnaligned(model.axis[i])
                if t == PRISMATIC
                else pin.JointModelSpherical()
                if t == BALL
                else pin.JointModelFreeFlyer()
            )
            jid = pm.addJoint(
                int(model.parent[i]) + 1, jm, pin.SE3(model.tree_R[i], model.tree_p[i]), model.joint_names[i]
            )
            pm.appendBodyToJoint(
                jid, pin.Inertia(model.mass[i], model.com[i], model.inertia_com[i]), pin.SE3.Identity()
            )
        pm.armature[:] = model.armature
        pm.gravity.linear = model.gravity
        self.pm, self.pd = pm, pm.createData()
        self.perm = np.arange(model.nv)

    def q(self, q):
        out = np.array(q, dtype=float)
        for i in range(self.m.nb):  # quaternions (w, x, y, z) -> (x, y, z, w)
            k = self.m.iq[i] + (3 if self.m.jtype[i] == FREE else 0)
            if self.m.jtype[i] in (BALL, FREE):
                out[k : k + 4] = np.roll(q[k : k + 4], -1)
        return out

    def vec(self, x):
        return x


def _pin_derivatives(oracle, q, v, a):
    """Pinocchio's (dtau_dq, dtau_dv) in pbsim's DOF order.  Pinocchio differentiates along its
    local tangent (free-flyer: SE(3) exp); it agrees with pbsim's ``q (+) dq`` (R^3 x SO(3),
    position moved by R dq_lin) to first order, so the matrices are compared as they are."""
    pin = oracle.pin
    pin.computeRNEADerivatives(oracle.pm, oracle.pd, oracle.q(q), oracle.vec(v), oracle.vec(a))
    P = oracle.perm
    return oracle.pd.dtau_dq[np.ix_(P, P)].copy(), oracle.pd.dtau_dv[np.ix_(P, P)].copy()


def _pin_kinetic_gradient(oracle, q, v):
    """dK/dq from Pinocchio analytically: with zero gravity and zero velocity, RNEA is M(q) a, so
    ``computeRNEADerivatives(q, 0, v)`` gives the columns (dM/dq_k) v and dK/dq_k = 1/2 v^T (dM/dq_k) v."""
    pin, pm, pd = oracle.pin, oracle.pm, oracle.pd
    g = pm.gravity.linear.copy()
    pm.gravity.linear = np.zeros(3)
    try:
        vp = oracle.vec(v)
        pin.computeRNEADerivatives(pm, pd, oracle.q(q), np.zeros(pm.nv), vp)
        dMv = pd.dtau_dq.copy()
    finally:
        pm.gravity.linear = g
    return (0.5 * vp @ dMv)[oracle.perm]


def _urdf(rel):
    path = pybullet_file(rel)
    model = pbsim.load(path, floating_base=True)
    return model, lambda: PinOracle(model, path)


def _built(make):
    model = make()
    return model, lambda: PinBuilt(model)


MODELS = {
    "chain8": lambda: _built(lambda: pbsim_models.chain(8)),
    "prismatic_tree": lambda: _built(prismatic_tree),
    "dog_free_ball": lambda: _built(pbsim_models.dog),
    "floating_mixed": lambda: _built(floating_mixed),
    "spherical_chain4": lambda: _built(lambda: pbsim_models.chain(4, joint="spherical")),
    "a1": lambda: _urdf("a1/a1.urdf"),
    "laikago": lambda: _urdf("laikago/laikago_toes_zup.urdf"),
}


def _states(model, seed, n=N_STATES):
    rng = np.random.default_rng(seed)
    Q = np.array([model.random_configuration(rng) for _ in range(n)])
    return Q, rng.normal(size=(n, model.nv)) * 2, rng.normal(size=(n, model.nv)) * 3


def _rel(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def _fd_rnea(model, q, v, a, h=1e-6):
    """Central differences of pbsim.rnea along q (+) h e_k and v + h e_k (columns k)."""
    E = np.eye(model.nv) * h
    Q = np.tile(q, (model.nv, 1))
    Qp, Qm = pbsim.integrate(model, Q, E), pbsim.integrate(model, Q, -E)
    V, A = np.tile(v, (model.nv, 1)), np.tile(a, (model.nv, 1))
    dq = (pbsim.rnea(model, Qp, V, A) - pbsim.rnea(model, Qm, V, A)).T / (2 * h)
    dv = (pbsim.rnea(model, Q, v + E, A) - pbsim.rnea(model, Q, v - E, A)).T / (2 * h)
    return dq, dv


def _fd_kinetic(model, q, v, h=1e-6):
    E = np.eye(model.nv) * h
    Q, V = np.tile(q, (model.nv, 1)), np.tile(v, (model.nv, 1))
    Kp = pbsim.energy(model, pbsim.integrate(model, Q, E), V)[:, 0]
    Km = pbsim.energy(model, pbsim.integrate(model, Q, -E), V)[:, 0]
    return (Kp - Km) / (2 * h)


@pytest.mark.parametrize("name", list(MODELS))
def test_rnea_derivatives_match_pinocchio(name):
    pytest.importorskip("pinocchio")
    model, oracle = MODELS[name]()
    pin = oracle()
    Q, V, A = _states(model, 0)
    DQ, DV = pbsim.rnea_derivatives(model, Q, V, A)  # batched
    for k in range(len(Q)):
        rq, rv = _pin_derivatives(pin, Q[k], V[k], A[k])
        assert _rel(DQ[k], rq) < TOL_PIN, (k, _rel(DQ[k], rq))
        assert _rel(DV[k], rv) < TOL_PIN, (k, _rel(DV[k], rv))
        dq1, dv1 = pbsim.rnea_derivatives(model, Q[k], V[k], A[k])  # single state: same numbers
        assert np.array_equal(dq1, DQ[k]) and np.array_equal(dv1, DV[k])


@pytest.mark.parametrize("name", list(MODELS))
def test_rnea_derivatives_match_finite_differences(name):
    """pbsim's own tangent convention, independently of Pinocchio (B-T1: relative <= 1e-6)."""
    model, _ = MODELS[name]()
    Q, V, A = _states(model, 1, 3)
    for k in range(len(Q)):
        dq, dv = pbsim.rnea_derivatives(model, Q[k], V[k], A[k])
        fq, fv = _fd_rnea(model, Q[k], V[k], A[k])
        assert _rel(dq, fq) < TOL_FD, _rel(dq, fq)
        assert _rel(dv, fv) < TOL_FD, _rel(dv, fv)


@pytest.mark.parametrize("name", list(MODELS))
def test_kinetic_energy_gradient(name):
    model, oracle = MODELS[name]()
    Q, V, _ = _states(model, 2)
    GQ, GV = pbsim.kinetic_energy_gradient(model, Q, V)
    M = pbsim.crba(model, Q)
    pin = oracle() if _has_pinocchio() else None
    for k in range(len(Q)):
        fd = _fd_kinetic(model, Q[k], V[k])
        assert _rel(GQ[k], fd) < TOL_FD, _rel(GQ[k], fd)
        assert _rel(GV[k], M[k] @ V[k]) < 1e-12
        if pin is not None:
            ref = _pin_kinetic_gradient(pin, Q[k], V[k])
            assert _rel(GQ[k], ref) < TOL_PIN, _rel(GQ[k], ref)
        gq, gv = pbsim.kinetic_energy_gradient(model, Q[k], V[k])
        assert np.array_equal(gq, GQ[k]) and np.array_equal(gv, GV[k])


def _has_pinocchio():
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        return False
    return True


def test_kinetic_gradient_planar_double_pendulum():
    """The note's hand check: dK/dq2 = -m2 l1 l2 qd1 (qd1 + qd2) sin q2 (the links' own rotational
    inertia adds 1/2 J (qd1 + qd2)^2 and 1/2 J qd1^2 to K, which do not depend on q)."""
    b = ModelBuilder("double_pendulum")
    b.add_link(LinkSpec("world"))
    m1, m2, l1, l2 = 1.3, 0.7, 0.9, 0.6
    b.add_link(LinkSpec("a", m1, np.array([l1, 0, 0]), np.eye(3) * 0.01))
    b.add_link(LinkSpec("b", m2, np.array([l2, 0, 0]), np.eye(3) * 0.02))
    b.add_joint(JointSpec("j1", "revolute", "world", "a", axis=np.array([0, 0, 1.0])))
    b.add_joint(JointSpec("j2", "revolute", "a", "b", p=np.array([l1, 0, 0]), axis=np.array([0, 0, 1.0])))
    model = b.build()
    q, v = np.array([0.3, 1.1]), np.array([0.8, -1.7])
    gq, _ = pbsim.kinetic_energy_gradient(model, q, v)
    assert abs(gq[0]) < 1e-14
    assert abs(gq[1] - (-m2 * l1 * l2 * v[0] * (v[0] + v[1]) * np.sin(q[1]))) < 1e-12


def test_bad_input_is_a_named_error():
    model = pbsim_models.chain(3)
    q, v = np.zeros(3), np.zeros(3)
    for call in (
        lambda: pbsim.rnea_derivatives(model, np.zeros(4), v, v),
        lambda: pbsim.rnea_derivatives(model, q, np.zeros((2, 2)), v),
        lambda: pbsim.rnea_derivatives(model, q, v, [0.0, np.nan, 0.0]),
        lambda: pbsim.rnea_derivatives(model, q, v, "abc"),
        lambda: pbsim.rnea_derivatives(model, np.zeros((2, 3)), np.zeros((3, 3)), v),
        lambda: pbsim.kinetic_energy_gradient(model, q, np.zeros(2)),
        lambda: pbsim.kinetic_energy_gradient(model, [np.inf, 0, 0], v),
    ):
        with pytest.raises(pbsim.InputError) as e:
            call()
        assert isinstance(e.value, pbsim.PbsimError)
        assert any(n in str(e.value) for n in ("q", "v", "qdd"))
