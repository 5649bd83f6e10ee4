"""PBAD's contact energy (paper 000 Eq. 9, pbsim.contact.energy) on every environment shape: its
gradient w.r.t. the point's world position against central differences of the energy, and its
PSD-projected Hessian against central differences of the gradient, at points inside a box, a
sphere, a heightfield and a mesh terrain (depth and normal from the one detection, env_sdf)."""

from pathlib import Path

import numpy as np
import pytest

from conftest import run_cudasim_twin
from _models import free_body
from pbsim.contact import Box, ContactPoints, HeightField, MeshTerrain, Scene, Sphere
from pbsim.contact.energy import contact_energy, contact_step_fraction, energy_parameters
from pbsim.contact.query import contact_detect

D1, D2, DT = 1e3, 1e4, 0.01
I3 = np.eye(3)


def _ks(shape, radius):
    m = free_body("box", [0.1, 0.1, 0.1])
    pts = ContactPoints(np.zeros(1, np.int32), np.zeros((1, 3)), np.array([float(radius)]))
    return Scene(environment=[shape], points=pts).kernel_arrays(m)


def _eval(ks, x, xk, ev=0.0):
    F, K = np.zeros(3), np.zeros((3, 3))
    E = contact_energy(
        ks, 0, D1, D2, ev, I3, np.ascontiguousarray(x, float), I3, np.ascontiguousarray(xk, float), DT, F, K
    )
    return E, F, K


def _fd(ks, x, xk, h=1e-7, ev=0.0):
    """Central differences: gradient of E, and Hessian as the derivative of the (exact) gradient F."""
    g, H = np.zeros(3), np.zeros((3, 3))
    for a in range(3):
        e = np.zeros(3)
        e[a] = h
        Ep, Fp, _ = _eval(ks, x + e, xk, ev)
        Em, Fm, _ = _eval(ks, x - e, xk, ev)
        g[a] = (Ep - Em) / (2 * h)
        H[:, a] = (Fp - Fm) / (2 * h)
    return g, 0.5 * (H + H.T)


def _psd(H):
    lam, V = np.linalg.eigh(H)
    return (V * np.maximum(lam, 0.0)) @ V.T


def _depth(ks, x):
    return contact_detect(ks, 0, I3, np.ascontiguousarray(x, float))


def _rot(axis, ang):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return I3 + np.sin(ang) * K + (1 - np.cos(ang)) * K @ K


def _check_flat(ks, x, xk_slow, xk_fast):
    """On a flat piece (normal constant around x and the same at x_k): the gradient is exact, the
    Hessian equals the finite-difference one while the contact block is convex (slow sliding) and
    its PSD projection when sliding makes it indefinite.  Returns the relative errors."""
    errs = []
    for xk, projected in ((xk_slow, False), (xk_fast, True)):
        E, F, K = _eval(ks, x, xk)
        assert E > 0
        g, H = _fd(ks, x, xk)
        eg = np.abs(F - g).max() / np.abs(g).max()
        ref = _psd(H) if projected else H
        eh = np.abs(K - ref).max() / np.abs(ref).max()
        assert eg < 1e-6, (eg, F, g)
        assert eh < 1e-5, (eh, K, ref)
        assert (np.linalg.eigvalsh(H).min() < -1e-3 * np.abs(H).max()) == projected  # the projection was needed
        errs.append((eg, eh))
    return errs


def test_energy_fd_box():
    R = _rot([1, 2, 0.5], 0.3)
    box = Box([0.5, 0.4, 0.2], R, [0.1, 0.2, -0.2])
    ks = _ks(box, 0.01)
    loc = lambda v: R @ np.asarray(v, float) + box.p  # noqa: E731
    x = loc([0.1, -0.05, 0.197])  # 3 mm inside the top face, radius 1 cm: d = 13 mm
    sd, *n = _depth(ks, x)[3:]
    assert abs(sd - 0.013) < 1e-12 and np.allclose(n, R[:, 2])
    _check_flat(ks, x, loc([0.1 - 2e-5, -0.05 + 1e-5, 0.201]), loc([0.1 - 4e-3, -0.05 + 2e-3, 0.201]))


def test_energy_fd_heightfield_planar_cells():
    """A ridge heightfield (heights vary along x only: every bilinear cell is a plane, tilted
    differently from its neighbours): phi and its normal are exact there."""
    xs = np.linspace(0.0, 2.0, 21)
    H = np.repeat((0.1 * np.sin(3 * xs))[:, None], 11, axis=1)
    hf = HeightField(H, (0.0, 2.0, 0.0, 1.0))
    ks = _ks(hf, 0.0)
    f = lambda x: np.interp(x, xs, 0.1 * np.sin(3 * xs))  # noqa: E731
    x = np.array([0.73, 0.42, f(0.73) - 0.002])
    assert _depth(ks, x)[3] > 0.0015
    _check_flat(ks, x, np.array([0.7298, 0.4201, f(0.73) + 0.004]), np.array([0.725, 0.417, f(0.725) + 0.004]))


def test_energy_fd_mesh_terrain():
    """A box mesh's signed-distance grid near the middle of its top face (exact, linear distances:
    the trilinear grid is exact there, up to the float32 node values)."""
    trimesh = pytest.importorskip("trimesh")
    mesh = trimesh.creation.box(extents=(2.0, 2.0, 0.2))
    mesh.apply_translation((0.3, 0.0, 0.0))  # top face z = 0.1
    ter = MeshTerrain.from_mesh(mesh, spacing=0.05, padding=0.1)
    ks = _ks(ter, 0.002)
    x = np.array([0.41, 0.13, 0.097])
    sd, *n = _depth(ks, x)[3:]
    assert abs(sd - 0.005) < 1e-7 and np.allclose(n, [0, 0, 1], atol=1e-6)
    _check_flat(ks, x, np.array([0.4098, 0.1301, 0.101]), np.array([0.405, 0.128, 0.101]))


def test_energy_fd_sphere():
    """A sphere (curved): the gradient is exact (the tangential projector is the one at the start
    of the step, so E is a function of x alone); the Hessian drops only the curvature term
    2 d (D1 + D2 |u|^2) d2d/dx2 = -2 d (D1 + D2 |u|^2) (I - n n^T) / rho, checked exactly where the
    point moved along the normal (u = 0); sliding, it is PSD."""
    c, rs = np.array([0.1, -0.2, 0.3]), 0.5
    ks = _ks(Sphere(c, rs), 0.005)
    u = np.array([0.3, -0.5, 0.8])
    u /= np.linalg.norm(u)
    x = c + (rs - 0.002) * u  # d = 7 mm
    rho = rs - 0.002
    # moved along the normal: u = 0
    E, F, K = _eval(ks, x, c + (rs + 0.003) * u)
    g, H = _fd(ks, x, c + (rs + 0.003) * u)
    d = 0.007
    curv = -2 * d * D1 * (I3 - np.outer(u, u)) / rho
    assert np.abs(F - g).max() < 1e-6 * np.abs(g).max()
    assert np.abs(K + curv - H).max() < 1e-5 * np.abs(H).max(), (K + curv, H)
    # sliding in any direction: exact gradient, PSD symmetric Hessian
    rng = np.random.default_rng(3)
    for _ in range(4):
        xk = x + rng.normal(size=3) * 3e-3
        E, F, K = _eval(ks, x, xk)
        g, H = _fd(ks, x, xk)
        assert np.abs(F - g).max() < 1e-6 * np.abs(g).max(), (F, g)
        assert np.allclose(K, K.T) and np.linalg.eigvalsh(K).min() > -1e-9 * np.abs(K).max()


@pytest.mark.parametrize("slide", [0.5e-3, 4e-3])  # m over the step: below and above friction_speed * DT
def test_lagged_coulomb_energy_fd_and_force(slide):
    """friction="coulomb" (ev > 0): the spring D1 d^2 and the lagged friction potential mu lam dt
    f0(|u|), lam = 2 D1 d_k frozen at the start of the step.  Gradient and Hessian equal central
    differences (the potential is convex: no projection), the tangential force is Coulomb's mu lam
    once sliding faster than ev, and nothing pushes along the normal beyond the spring (no lift)."""
    ev = 0.1  # m/s: the smoothing speed (dt 0.01: 1 mm of slip)
    ks = _ks(Box([1.0, 1.0, 0.2], I3, [0.0, 0.0, -0.2]), 0.0)  # top face z = 0
    x = np.array([0.05, 0.02, -0.003])
    t = np.array([0.6, -0.8, 0.0])
    xk = x - slide * t + np.array([0.0, 0.0, 0.001])  # 2 mm deep at the start: lam = 2 D1 0.002
    E, F, K = _eval(ks, x, xk, ev)
    g, H = _fd(ks, x, xk, ev=ev)
    assert np.abs(F - g).max() < 1e-6 * np.abs(g).max(), (F, g)
    assert np.abs(K - 0.5 * (K + K.T)).max() == 0.0 and np.abs(K - H).max() < 1e-5 * np.abs(H).max(), (K, H)
    assert np.linalg.eigvalsh(K).min() > -1e-12 * np.abs(K).max()
    mu, lam = D2 * 0.1 / D1, 2 * D1 * 0.002
    assert np.isclose(F[2], -2 * D1 * 0.003, rtol=1e-12)  # the spring only
    ft = np.linalg.norm(F[:2])
    if slide / DT > ev:
        assert np.isclose(ft, mu * lam, rtol=1e-12) and np.allclose(F[:2] / ft, t[:2])
    else:
        y = slide / DT
        assert np.isclose(ft, mu * lam * (2 * y / ev - y * y / ev**2), rtol=1e-12)
    # no friction for a point that was outside at the start of the step
    E0, F0, _ = _eval(ks, x, xk + np.array([0.0, 0.0, 0.003]), ev)
    assert np.isclose(E0, D1 * 0.003**2) and np.allclose(F0, [0.0, 0.0, -2 * D1 * 0.003])
    # a point that touched at the start keeps its (lagged) friction when the iterate leaves the surface:
    # E is continuous there (gated by the iterate's depth it jumped by the friction energy, and LM stalled)
    lo, hi = (_eval(ks, x + np.array([0.0, 0.0, 0.003 + s]), xk, ev) for s in (-1e-9, 1e-9))
    assert lo[0] > 0.0 and abs(hi[0] - lo[0]) < 1e-6 * lo[0] and np.allclose(hi[1][:2], lo[1][:2])
    assert hi[1][2] == 0.0  # no spring outside


def test_out_of_contact_is_zero_and_step_fraction():
    ks = _ks(Sphere([0, 0, 0], 0.5), 0.0)
    E, F, K = _eval(ks, np.array([0, 0, 0.6]), np.array([0, 0, 0.7]))
    assert E == 0 and not F.any() and not K.any()
    # a point 1 cm outside, a step 4 cm into the surface (n . dx = -0.04) predicting 3 cm of depth:
    # the step stops at 1e-6 of that depth
    a = contact_step_fraction(-0.01, -0.04, 1e-6)
    assert abs(-0.01 + a * 0.04 - 1e-6 * 0.03) < 1e-15
    assert contact_step_fraction(-0.01, -0.005, 1e-6) == 1.0  # stays outside: the full step


def test_energy_parameters_from_scene_stiffness():
    m = free_body("box", [0.1, 0.1, 0.1])
    pts = ContactPoints(np.zeros(2, np.int32), np.zeros((2, 3)), np.zeros(2))
    ks = Scene(environment=[Sphere([0, 0, -1], 1.0)], points=pts, stiffness=400.0, mu=0.5).kernel_arrays(m)
    d1, d2 = energy_parameters(ks)
    assert np.allclose(d1, 200.0) and np.allclose(d2, 0.5 * 400.0 / (2 * 0.1))


def test_pbad_contact_step_on_cuda_backend_cudasim(tmp_path):
    """PBAD's step kernel with contact on a static Box and a heightfield bowl through the CUDA
    backend (CudaBatch, the cuda_twin of the step; numba's CUDA simulator in a subprocess) equals
    the CPU integrator's step, LM iterations included (_cudasim_pbad_contact.py)."""
    diffs, out = run_cudasim_twin(
        Path(__file__).with_name("_cudasim_pbad_contact.py"), tmp_path / "pbad_contact_cpu.npz"
    )
    assert set(diffs) == {"q", "v", "e"}, out
    assert max(diffs.values()) <= 1e-10, diffs
    assert "ITER same" in out, out
