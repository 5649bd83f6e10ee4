"""Penalty contact as generalized forces, for the explicit (baseline) integrators."""
from pbsim.backends.kernel import kernel


@kernel
def contact_generalized_forces(m, s, w, b, q, v, tau):
    """Add the contact forces' generalized force J^T f to ``tau`` (nv,).

    Expects ``velocity_pass`` and ``world_pass`` done for state b.  (Stub: the contact module
    fills this in; with ``s.npts == 0`` there is nothing to add.)"""
    for k in range(s.npts):
        pass
