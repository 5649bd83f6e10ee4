"""Paper 002's projected gradient method (Pan & Hauser, NMDP; notes/pbfd_nmdp.md B1, B5), shared by its two forms.

The Newton-Euler form (``nmdp``/``nmdp_zo``, Eq. 6, :mod:`pbsim.integrators.nmdp`) and the
position-based form (``pbd_nmdp``/``pbd_nmdp_zo``, Eq. 12, :mod:`pbsim.integrators.pbd_nmdp`) both solve::

    min_{theta, w} K(theta)  s.t.  G(theta, w) = G_0(theta) - sum_x J_x^T v_x(theta) w_x = 0,
                                   w_x >= 0, 1^T w_x <= 1

for the configuration theta at ``t + h`` (``h = alpha dt``, B5 item 1) from the carried state
``(theta_-, thetadot_-)`` (B5 item 3).  A form supplies, per trajectory, two hooks (bound with
:func:`pbsim.jit.specialize`, like the LM loop's problems):

- ``pgm_prepare(m, s, c, w, sw, x, b, q0, v0, h, dt) -> nc``: the sub-step's constants and the
  contact set (:func:`.contact.pgm_candidates`, fixed for the step: B5 item 8);
- ``pgm_eval(m, s, c, w, x, b, q0, v0, th, h, wts, nc, deriv, first) -> K``: ``x.G = G(th, wts)``
  and with ``deriv`` ``x.A = dG/dtheta`` (first order with ``first``: Eq. 7; else Eq. 10's A
  without ``dv_x/dtheta``), the rows ``x.Bm`` of ``B^T = (dG/dw)^T``, the capacities ``x.cap``,
  ``x.g = dK/dtheta`` and ``x.M = h^2 Q`` (Q: the QP's Hessian of K, Eq. 8); the contact part of
  G and A is :func:`.contact.pgm_contact` for both forms.

Everything else is in this package, a file per role:

- :mod:`.problem`: the hooks' placeholders, the scratch ``x`` (a form's namedtuple holds at least
  the fields of ``PGM_FIELDS``, built by ``pgm_arrays``, and the options of ``PGM_OPTIONS``), the
  ``stats`` columns and the velocity ``(theta (-) theta_-) / h`` (``pgm_velocity``);
- :mod:`.contact`: the contact set and the contact part of G, A and B (scene points and contact
  between bodies);
- :mod:`.project`: the manifold projection (Eq. 9 / 11, ``pgm_project``);
- :mod:`.qp`: the QP (Eq. 8 / 10, ``pgm_qp``);
- :mod:`.solve`: Algorithm 1 (``pgm_solve``);
- :mod:`.step`: Algorithm 2 (``pgm_step``, the contract's step kernel);
- :mod:`.integrator`: ``PgmIntegrator``, the integrator class both forms derive from (options,
  checks, diagnostics, the test tools), and the step's optional features;
- :mod:`.wrench`: the options of NMDP's contact wrench and the bounded body-body candidate buffer
  (also those of the velocity-level baselines ``ne_mdp`` and ``ne_dry``).

Not a method: the registry's discovery skips this package (:data:`pbsim.integrators.base.SHARED`).
"""
