"""The contact rows ``J^T f`` of a velocity-level step (scene and body-body points), stand-ins without pairs."""

from __future__ import annotations

from pbsim.jit import kernel, unused
from pbsim.contact.query import pair_force_jt, point_force_jt

ROW_EPS = 1e-24  # a contact whose normal row has |J^T n|^2 below this cannot move (fixed body): dropped


@kernel
def normal_row(m, w, b, body, px, py, pz, nx, ny, nz, row, nv):
    """``row = J^T n`` of the force direction n at the world point p of ``body`` (world poses
    done); returns False when the row cannot move the point (``|J^T n|^2 <= ROW_EPS``)."""
    for j in range(nv):
        row[j] = 0.0
    point_force_jt(m, w, b, body, px, py, pz, nx, ny, nz, row)
    nn = 0.0
    for j in range(nv):
        nn += row[j] * row[j]
    return nn > ROW_EPS


@kernel
def pair_point_force_jt(m, s, w, b, k, px, py, pz, fx, fy, fz, out):
    """``out += (J_A(x) - J_B(x))^T f`` for body-body point ``k`` (f on its body A, -f on its item's
    body B: :func:`pbsim.contact.query.pair_force_jt`)."""
    it = s.pp_item[k]
    pair_force_jt(m, w, b, s.it_a[it], s.it_b[it], s.it_lca[it], px, py, pz, fx, fy, fz, out)


@kernel
def contact_force_jt(m, s, w, b, kp, px, py, pz, fx, fy, fz, out):
    """``out += J^T f`` for candidate ``kp`` of a contact set: ``kp < s.npts`` the scene point ``kp``
    (its body's point Jacobian), else the body-body point ``kp - s.npts`` (the relative Jacobian,
    :func:`pair_point_force_jt`)."""
    if kp < s.npts:
        point_force_jt(m, w, b, s.pt_body[kp], px, py, pz, fx, fy, fz, out)
    else:
        pair_point_force_jt(m, s, w, b, kp - s.npts, px, py, pz, fx, fy, fz, out)


@kernel
def contact_normal_row(m, s, w, b, kp, px, py, pz, nx, ny, nz, row, nv):
    """:func:`normal_row` of candidate ``kp`` (:func:`contact_force_jt`)."""
    for j in range(nv):
        row[j] = 0.0
    contact_force_jt(m, s, w, b, kp, px, py, pz, nx, ny, nz, row)
    nn = 0.0
    for j in range(nv):
        nn += row[j] * row[j]
    return nn > ROW_EPS


@kernel
def no_pair_candidates(*args):
    """Stands in for the body-body candidates in a run without body-body items (:data:`BODY_CONTACT`)."""
    return 0


@kernel
def no_pair_direction(*args):
    """Stands in for a body-body point's vertex direction in a run without body-body items."""
    return 0.0, 0.0, 0.0


# the body-body kernels of the velocity-level steps (the candidate kernel is the method's own, added
# by the method), compiled only into runs whose scene has body-body items (Variants)
BODY_CONTACT = {"pair_point_force_jt": unused}
