"""Pieces shared by the velocity-level Newton-Euler baselines (``ne_dry``, ``ne_mdp``).

One step is ``v+ = v* + Mt^-1 (contact impulses)``, ``v* = v + dt Mt^-1 (tau - h)``, ``q+ = q (+) dt v+``
with ``Mt = M(q) + diag(arm)`` factored by :func:`pbsim.optim.linalg.cholesky_factor`:
:mod:`.free` the contact-free velocity ``v*``, :mod:`.contact` the contact rows ``J^T f`` (scene
points and body-body points), :mod:`.finish` the effort clamping and ``q+``.

Not a method: the registry's discovery skips this package (:data:`pbsim.integrators.base.SHARED`).
"""
