"""PBAD2 spider on a plane with Eq. 9 penalty contact (paper 000 Sec. 6.2): the contact gradient
against central differences, and a short walk at dt = 0.05 (scripts/examples/demo_spider.py runs 10 s)."""

import numpy as np

import pbsim
import pbsim_models
from pbsim.integrators import State, make
from pbsim_models.creatures import spider_contact_points, spider_standing, spider_trot

D1, D2 = 2e3, 1e8


def _spider(**opts):
    model = pbsim_models.spider()
    pts = spider_contact_points(model)
    pts.update(contact=True, D1=D1, D2=D2)
    return model, pts, make("pbad", model, points=pts, gtol=1e-6, **opts)


def test_contact_gradient_fd(rng):
    """Eq. 9 energy + gradient at states with feet in the ground and sliding: the gradient is exact
    (the Hessian of the contact term is a PSD projection, not checked here)."""
    model, pts, integ = _spider()
    q = spider_standing(model)
    q[2] -= 0.004  # feet 4 mm deep
    v = np.zeros(model.nv)
    v[:2] = rng.normal(size=2) * 0.3  # the torso slides: tangential term of Eq. 9 active
    for _ in range(3):
        qe = pbsim.integrate(model, q, 1e-3 * rng.normal(size=model.nv))
        E, g, _ = (a[0] for a in integ.objective(q, v, qe, 0.05, hessian=False))
        eps = 1e-7
        gf = np.zeros(model.nv)
        for a in range(model.nv):
            d = np.zeros(model.nv)
            d[a] = eps
            Ep = integ.objective(q, v, pbsim.integrate(model, qe, d), 0.05, hessian=False)[0][0]
            Em = integ.objective(q, v, pbsim.integrate(model, qe, -d), 0.05, hessian=False)[0][0]
            gf[a] = (Ep - Em) / (2 * eps)
        assert np.abs(g - gf).max() < 1e-5 * np.abs(gf).max(), (g, gf)


def test_spider_walks_forward_dt005():
    """40 steps (2 s) of the trot of demo_spider: every step converges, the torso and all its
    contact points stay above the ground, the torso moves forward (+x)."""
    model, pts, integ = _spider(max_iterations=150)
    s = State.make(model, spider_standing(model))
    kp = np.zeros(model.nv)
    kd = np.zeros(model.nv)
    kp[6:], kd[6:] = 150.0, 3.0
    torso = pts["points_body"] == model.body_index("torso")
    x0 = s.q[0, :3].copy()
    conv = []
    lowest = np.inf
    for _ in range(40):
        qref = spider_trot(model, s.q[0], s.t + 0.05, lift=0.35, knee=0.6)
        s, d = integ.step(s, pbsim.Control(mode="spd", kp=kp, kd=kd, q_ref=qref), 0.05)
        conv.append(bool(d.converged[0]))
        T = pbsim.forward_kinematics(model, s.q[0])
        z = [T[b][2, :3] @ p + T[b][2, 3] for b, p in zip(pts["points_body"][torso], pts["points_local"][torso])]
        lowest = min(lowest, min(z))
    assert np.isfinite(s.q).all()
    assert np.mean(conv) >= 0.95, np.mean(conv)
    assert lowest > 0.05, lowest  # the torso box never touches the ground
    dx = s.q[0, 0] - x0[0]
    assert dx > 0.2, dx  # 2/3 of a torso length in 2 s (measured: 0.41 m)
    assert 0.2 < s.q[0, 2] < 0.4
