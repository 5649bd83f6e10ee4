"""NMDP's contact wrench model (paper 002 Eq. 5, Remarks 6-7; pbsim.contact.nmdp): the vertices
``(k d^3 + zeta)(n + mu t^i)``, the smooth tangent basis and its derivative, ``dv/dtheta`` against
central differences (plane, tilted plane, sphere, capsule, box edge: <= 1e-6 relative), zeta only
on candidates, and the parameter checks."""

import numpy as np
import pytest

import pbsim
from pbsim.contact import Box, Capsule, ContactPoints, Plane, Scene, Sphere, sample_contact_points
from pbsim.contact.nmdp import (
    check_wrench_parameters,
    default_k,
    nmdp_basis,
    nmdp_basis_jacobian,
    nmdp_vertices,
    tangent_frame,
)
from pbsim.errors import InputError
from pbsim_models.parts import free_box as box


def _fd(model, scene, q, eps=1e-6, **kw):
    base = nmdp_vertices(model, scene, q, **kw)
    fd = np.zeros_like(base["dV"])
    for j in range(model.nv):
        e = np.zeros(model.nv)
        e[j] = eps
        vp = nmdp_vertices(model, scene, pbsim.integrate(model, q, e), **kw)["V"]
        vm = nmdp_vertices(model, scene, pbsim.integrate(model, q, -e), **kw)["V"]
        fd[..., j] = (vp - vm) / (2 * eps)
    return base, fd


def _rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


def _pose(model, z, quat=(0.95, 0.1, -0.2, 0.15), xy=(0.03, -0.02)):
    q = model.neutral()
    q[:3] = [xy[0], xy[1], z]
    quat = np.asarray(quat, float)
    q[3:7] = quat / np.linalg.norm(quat)
    return q


def test_basis_is_orthonormal_smooth_and_aligned_with_slopes():
    F = np.eye(3)
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        if n[2] < -0.99:
            continue
        t = np.array(nmdp_basis(F, *n)).reshape(2, 3)
        assert np.allclose(t @ t.T, np.eye(2), atol=1e-12) and np.allclose(t @ n, 0, atol=1e-12)
        assert np.allclose(np.cross(t[0], t[1]), n, atol=1e-12)
        T1, T2 = np.zeros((3, 3)), np.zeros((3, 3))
        nmdp_basis_jacobian(F, *n, T1, T2)
        d = rng.normal(size=3)
        d -= (d @ n) * n  # a tangent direction of the unit sphere
        h = 1e-6
        tp = np.array(nmdp_basis(F, *((n + h * d) / np.linalg.norm(n + h * d)))).reshape(2, 3)
        tm = np.array(nmdp_basis(F, *((n - h * d) / np.linalg.norm(n - h * d)))).reshape(2, 3)
        fd = (tp - tm) / (2 * h)
        assert np.abs(fd[0] - T1 @ d).max() < 1e-7 * max(1.0, np.abs(fd).max())
        assert np.abs(fd[1] - T2 @ d).max() < 1e-7 * max(1.0, np.abs(fd).max())
    assert np.allclose(nmdp_basis(F, 0.0, 0.0, 1.0), [1, 0, 0, 0, 1, 0])
    a = np.radians(20)
    t = np.array(nmdp_basis(F, -np.sin(a), 0.0, np.cos(a))).reshape(2, 3)  # plane z = x tan(a)
    assert np.allclose(t[0], [np.cos(a), 0, np.sin(a)]) and np.allclose(t[1], [0, 1, 0])  # up-slope, across
    assert np.allclose(nmdp_basis(F, 0.0, 0.0, -1.0), [1, 0, 0, 0, -1, 0])  # the singular point: a fixed frame


def test_y_up_model_gets_its_own_up_frame():
    m = box()
    m.gravity[:] = [0.0, -9.81, 0.0]
    F = tangent_frame(m)
    assert np.allclose(F[:, 2], [0, 1, 0]) and np.allclose(F.T @ F, np.eye(3))
    t = np.array(nmdp_basis(F, 0.0, 1.0, 0.0)).reshape(2, 3)
    assert np.allclose(t @ [0, 1, 0], 0) and np.allclose(np.cross(t[0], t[1]), [0, 1, 0])


def test_vertices_are_the_capped_pyramid():
    m = box()
    sc = Scene(environment=[Plane([0, 0, 1], 0.0)], points=sample_contact_points(m), mu=0.5)
    q = m.neutral()
    q[2] = 0.045  # the bottom face 5 mm deep
    k = default_k(m, sc.delta_ref)
    assert np.isclose(k, 9.81 / (4 * 0.005**3))
    r = nmdp_vertices(m, sc, q, vx=4, zeta=0.25)
    deep = r["sd"] > 0
    assert deep.sum() == 8
    assert np.allclose(r["cap"][deep], k * 0.005**3 + 0.25)
    assert np.allclose(r["cap"][~deep], 0.25)  # candidates out of contact: zeta only (newtons)
    V = r["V"][deep][0] / r["cap"][deep][0]
    assert np.allclose(V, [[0.5, 0, 1], [0, 0.5, 1], [-0.5, 0, 1], [0, -0.5, 1]])
    r = nmdp_vertices(m, sc, q, vx=4, zeta=0.25, cand=r["sd"] > 0)
    assert np.allclose(r["cap"][~deep], 0) and np.allclose(r["V"][~deep], 0)  # not candidates: nothing


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


SCENES = {
    "plane": lambda m: Scene(environment=[Plane([0, 0, 1], 0.0)], points=sample_contact_points(m), mu=0.5),
    "tilted_plane": lambda m: Scene(
        environment=[Plane(np.array([0.3, -0.2, 1]) / np.linalg.norm([0.3, -0.2, 1]), 0.0)],
        points=sample_contact_points(m),
        mu=0.7,
    ),
    "sphere": lambda m: Scene(environment=[Sphere([0.1, -0.05, -1.0], 1.0)], points=sample_contact_points(m), mu=0.6),
    "capsule": lambda m: Scene(
        environment=[Capsule([-1, 0.05, -0.3], [1, -0.1, -0.3], 0.3)], points=sample_contact_points(m), mu=0.6
    ),
    "box_edge": lambda m: Scene(
        environment=[Box([1.0, 0.5, 0.5], _rz(0.2), [0.0, 0.5, -0.5])],
        points=ContactPoints(
            np.zeros(3, np.int32),
            np.array([[0.2, 0.0, -0.05], [-0.2, 0.0, -0.05], [0.0, 0.0, -0.05]]),
            np.array([0.05, 0.05, 0.05]),
        ),
        mu=0.6,
    ),
}


@pytest.mark.parametrize("where", list(SCENES))
def test_vertex_derivative_matches_central_differences(where):
    m = box()
    sc = SCENES[where](m)
    q = _pose(m, 0.06, quat=(0.99, 0.05, -0.03, 0.1)) if where == "box_edge" else _pose(m, 0.04)
    base, fd = _fd(m, sc, q, vx=5, zeta=0.3)
    assert (base["sd"] > 0).sum() >= 1
    assert _rel(base["dV"], fd) <= 1e-6, (where, _rel(base["dV"], fd))


def test_curvature_is_differentiated_on_spheres():
    """Freezing n would miss the (k d^3 + zeta)(I + mu dt/dn) dn/dx term: it is visible."""
    m = box()
    sc = Scene(environment=[Sphere([0.0, 0.0, -0.2], 0.2)], points=sample_contact_points(m), mu=0.6)
    q = _pose(m, 0.04, quat=(1, 0, 0, 0), xy=(0.0, 0.0))
    q[:3] = [0.05, 0.02, 0.04]
    base, fd = _fd(m, sc, q, vx=4, zeta=0.3)
    assert _rel(base["dV"], fd) <= 1e-6


def test_parameter_checks_are_input_errors():
    for bad in (
        dict(mu=-0.1),
        dict(mu=float("nan")),
        dict(k=0.0),
        dict(k=-1.0),
        dict(k=float("inf")),
        dict(zeta=-1.0),
        dict(vx=2),
        dict(vx=3.5),
        dict(vx=True),
        dict(k="stiff"),
    ):
        args = dict(mu=0.5, k=1.0, zeta=0.0, vx=4) | bad
        with pytest.raises(InputError):
            check_wrench_parameters("test", **args)
    check_wrench_parameters("test", 0.0, 1.0, 0.0, 3)


def test_box_edge_scene_touches_the_edge_from_outside():
    """The box_edge case exercises the exterior-edge curvature (two active axes)."""
    m = box()
    sc = SCENES["box_edge"](m)
    r = nmdp_vertices(m, sc, _pose(m, 0.06, quat=(0.99, 0.05, -0.03, 0.1)), vx=5, zeta=0.3)
    deep = r["sd"] > 0
    assert deep.any()
    nz = r["n"][deep]
    assert (np.abs(nz[:, 2]) < 0.999).any() and (np.abs(nz[:, 2]) > 0.01).any()  # neither face's normal
