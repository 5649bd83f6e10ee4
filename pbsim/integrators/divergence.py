"""The one divergence rule every integrator shares (docs/reliability.md).

A state is *diverged* when

1. q or v holds NaN or inf, or
2. a joint velocity exceeds the speed limit (``DivergenceRule.speed_limit``, 1e4 rad/s or m/s:
   ~95,000 rpm, a hundred times what robot joints reach; a backstop for DOFs that carry almost
   no mass, which the energy cannot see), or
3. the total mechanical energy ``K + U`` (kinetic + gravity, ``Diagnostics.energy``) rose above
   its value when the run started by more than ``energy_factor`` (10) times the model's energy
   scale ``E_model = g * (sum_i m_i 2 r_i + m_total * 1 m)``, at least 1 J: ``sum m_i g 2 r_i``
   bounds the potential energy the model can release by moving its bodies (``r_i``, the reach of
   body i's centre of mass from the root joint, bounds how far it can drop), ``m_total g 1 m``
   adds a metre of fall for the whole model, and the energy stored at the start in joint
   springs and joint-limit springs (a pose outside a joint's range) is added to the reference.
   A passive model cannot gain energy at all (a stable integrator's drift is a fraction of
   E_model); an actuated one gaining 10 E_model moves as a whole at ~sqrt(20 g (2R + 1 m))
   (24 m/s for a reach R of 1 m), beyond any legged robot.  When the step has a control, what
   it can add is added to the scale first (:func:`actuator_energy`:
   ``sum_k |tau_k| L_k + 1/2 kp_k L_k^2`` over the DOF ranges L, pi or 1 m where unlimited).

:func:`check` is called by ``Integrator.step`` after every step of every method; it fills
``Diagnostics.diverged`` and ``Diagnostics.divergence`` (per trajectory: which joint or body left
the bound, by how much; None when not diverged).  ``rollout``'s ``on_nan`` applies to it, and
the viewer pauses on it.  The reference energy rides in ``State.energy_ref`` (set at the first
step, dropped with :meth:`State.reset_history`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

@dataclass(frozen=True)
class DivergenceRule:
    """The bounds of the rule (``Integrator.divergence``; replace it per integrator to change them)."""

    speed_limit: float = 1e4  # rad/s (revolute, ball, free angular) or m/s (prismatic, free linear)
    energy_factor: float = 10.0  # K + U may rise by this many E_model above its start


DEFAULT = DivergenceRule()


def energy_scale(model) -> float:
    """``E_model`` [J] of the module doc: ``g (sum_i m_i 2 r_i + m_total * 1 m)``, at least 1 J."""
    cached = model.__dict__.get("_energy_scale")
    if cached is not None:
        return cached
    nb = model.nb
    reach = np.zeros(nb)  # reach of each body's frame origin from the root joint, along the tree
    for i in range(nb):  # parents come before children
        par = int(model.parent[i])
        r = (reach[par] if par >= 0 else 0.0) + (float(np.linalg.norm(model.tree_p[i])) if par >= 0 else 0.0)
        if int(model.jtype[i]) == 1:  # prismatic: the slide adds its travel (1 m when unlimited)
            j = int(model.iv[i])
            lo, hi = float(model.lower[j]), float(model.upper[j])
            r += max(abs(lo), abs(hi)) if np.isfinite(lo) and np.isfinite(hi) else 1.0
        reach[i] = r
    r_com = reach + np.linalg.norm(model.com, axis=1) if nb else reach
    g = max(float(np.linalg.norm(model.gravity)), 9.81)
    mass = np.asarray(model.mass, float)
    e = g * (float(np.sum(mass * 2.0 * r_com)) + float(mass.sum()) * 1.0)
    e = max(e, 1.0)
    model.__dict__["_energy_scale"] = e
    return e


def _spring_terms(model):
    """Cached per model: the 1-DOF joints with a spring (q index, |k|, springref) and those with a
    limit spring (q index, kp_limit, lower, upper)."""
    got = model.__dict__.get("_spring_terms")
    if got is None:
        k = np.asarray(model.stiffness, float)
        kl = model.limit_gains()[0] if model.nv else np.zeros(0)
        one = [(int(model.iv[i]), int(model.iq[i])) for i in range(model.nb) if int(model.nvj[i]) == 1]
        sp = [(j, iq) for j, iq in one if k[j] != 0]
        li = [(j, iq) for j, iq in one if kl[j] > 0]
        got = model.__dict__["_spring_terms"] = (
            np.array([iq for _, iq in sp], dtype=np.int64),
            np.array([abs(k[j]) for j, _ in sp], float),
            np.array([model.springref[iq] for _, iq in sp], float),
            np.array([iq for _, iq in li], dtype=np.int64),
            np.array([kl[j] for j, _ in li], float),
            np.array([model.lower[j] for j, _ in li], float),
            np.array([model.upper[j] for j, _ in li], float),
        )
    return got


def spring_energy(model, q) -> np.ndarray:
    """(B,) energy stored at q in the joint springs (``1/2 k (q - springref)^2``; ball and free
    joints: :func:`pbsim.dynamics.passive.ball_springs`) and
    joint-limit springs (``1/2 kp_limit (q - limit)^2`` past a limit: a file whose default pose
    lies outside a joint's range, as gymnasium's ant's ankles, releases it at the first steps)."""
    iq_s, k, ref, iq_l, kl, lo, hi = _spring_terms(model)
    e = np.zeros(q.shape[0])
    if len(iq_s):
        e += (0.5 * k * (q[:, iq_s] - ref) ** 2).sum(axis=1)
    if len(iq_l):
        ql = q[:, iq_l]
        past = np.maximum(lo - ql, 0.0) + np.maximum(ql - hi, 0.0)
        e += (0.5 * kl * past**2).sum(axis=1)
    balls = model.__dict__.get("_ball_springs")
    if balls is None:
        multi = [j for i in range(model.nb) if model.nvj[i] > 1 for j in range(model.iv[i], model.iv[i] + model.nvj[i])]
        balls = model.__dict__["_ball_springs"] = bool(np.any(model.stiffness[np.array(multi, dtype=np.int64)]))
    if balls:
        from pbsim.dynamics.passive import ball_spring_energy_batch

        qs = np.ascontiguousarray(q, dtype=np.float64)
        eb = np.empty(qs.shape[0])
        ball_spring_energy_batch(model.k, qs, np.zeros((qs.shape[0], model.nv)), eb)
        e += eb
    return e


def reference_energy(model, state) -> np.ndarray:
    """(B,) the energy the rule measures a run against: K + U + springs of ``state``."""
    from pbsim.dynamics.workspace import work_for
    from pbsim.dynamics.energy import energy_batch

    q = np.ascontiguousarray(state.q, dtype=np.float64)
    v = np.ascontiguousarray(state.v, dtype=np.float64)
    e = np.empty((q.shape[0], 2))
    energy_batch(model.k, work_for(model, q.shape[0]), q, v, e)
    return e.sum(axis=1) + spring_energy(model, q)


def _dof_joint(model) -> tuple[np.ndarray, np.ndarray]:
    """(nv,) body index of each DOF and (nv,) True where the DOF is linear (m/s)."""
    got = model.__dict__.get("_dof_joint")
    if got is None:
        body = np.zeros(model.nv, dtype=np.int64)
        linear = np.zeros(model.nv, dtype=bool)
        for i in range(model.nb):
            a, n = int(model.iv[i]), int(model.nvj[i])
            body[a : a + n] = i
            if int(model.jtype[i]) == 1:
                linear[a] = True
            elif int(model.jtype[i]) == 3:
                linear[a : a + 3] = True
        got = model.__dict__["_dof_joint"] = (body, linear)
    return got


def dof_ranges(model) -> np.ndarray:
    """(nv,) how far each DOF can move: its limit range, else pi (angular) or 1 m (linear)."""
    got = model.__dict__.get("_dof_ranges")
    if got is None:
        _, linear = _dof_joint(model)
        got = np.where(linear, 1.0, np.pi)
        for i in range(model.nb):
            if int(model.nvj[i]) == 1:
                j = int(model.iv[i])
                if np.isfinite(model.lower[j]) and np.isfinite(model.upper[j]):
                    got[j] = max(float(model.upper[j] - model.lower[j]), 0.0)
        model.__dict__["_dof_ranges"] = got
    return got


def actuator_energy(model, control, B: int) -> np.ndarray:
    """(B,) the work the step's control can do across the joints' ranges L:
    ``sum_k |tau_k| L_k + 1/2 kp_k L_k^2`` (torques, actuator forces and PD springs, the
    model's actuators through their ``ctrl`` included)."""
    try:
        kc = control.kernel_arrays(model, B)
    except Exception:  # noqa: BLE001 - no bound beyond the model's when the control cannot say
        return np.zeros(B)
    L = dof_ranges(model)
    tau = np.abs(np.broadcast_to(np.asarray(kc.tau, float), (B, model.nv)))
    out = (tau * L).sum(axis=1)
    if kc.mode != 0:
        kp = np.abs(np.broadcast_to(np.asarray(kc.kp, float), (B, model.nv)))
        out = out + 0.5 * (kp * L * L).sum(axis=1)
    return np.where(np.isfinite(out), out, 0.0)


def check(model, before, new, diag, rule: DivergenceRule = DEFAULT, control=None) -> np.ndarray:
    """Apply the rule to the step ``before -> new``; fills ``diag.diverged`` (B,) and
    ``diag.divergence`` (B,) list of str/None, carries the reference energy into ``new``;
    returns ``diag.diverged``."""
    B = new.q.shape[0]
    e_ref = getattr(before, "energy_ref", None)
    if e_ref is None or np.shape(e_ref) != (B,):
        e_ref = reference_energy(model, before)
    new.energy_ref = e_ref
    # fast path (every step of a healthy run): a few whole-batch reductions; NaN fails every test
    energy = np.asarray(diag.energy, float).reshape(-1) if diag.energy is not None else None
    vmax = float(np.abs(new.v).max()) if new.v.size else 0.0
    if (
        vmax <= rule.speed_limit
        and np.isfinite(new.q.sum())
        and (diag.nan is None or not diag.nan.any())
        and (
            energy is None
            or energy.shape != (B,)
            or rule.energy_factor is None
            or float((energy - e_ref).max()) <= rule.energy_factor * energy_scale(model)
        )
    ):
        diag.diverged = np.zeros(B, bool)
        diag.divergence = [None] * B
        return diag.diverged
    finite = np.isfinite(new.q).all(axis=1) & np.isfinite(new.v).all(axis=1)
    if diag.nan is not None:
        finite &= ~np.asarray(diag.nan, bool)
    why: list = [None] * B
    bad = ~finite
    for b in np.flatnonzero(bad):
        why[b] = "NaN or inf in the state"
    with np.errstate(invalid="ignore"):
        speed = np.abs(new.v)
        fast = finite & (speed > rule.speed_limit).any(axis=1) if model.nv else np.zeros(B, bool)
    if fast.any():
        body, linear = _dof_joint(model)
        for b in np.flatnonzero(fast):
            k = int(np.argmax(speed[b]))
            unit = "m/s" if linear[k] else "rad/s"
            why[b] = (f"joint {model.joint_names[body[k]]!r} (body {model.body_names[body[k]]!r}): speed "
                      f"{speed[b, k]:.3g} {unit} beyond the limit {rule.speed_limit:g}")
        bad |= fast
    if energy is not None and energy.shape == (B,) and rule.energy_factor is not None:
        scale = np.full(B, energy_scale(model))
        with np.errstate(invalid="ignore"):
            gain = energy - e_ref
            high = finite & ~fast & (gain > rule.energy_factor * scale)
        if high.any() and control is not None:  # rare: only then what the actuators may add
            scale = scale + actuator_energy(model, control, B)
            high &= gain > rule.energy_factor * scale
        for b in np.flatnonzero(high):
            why[b] = (f"energy {energy[b]:.4g} J, {gain[b]:.3g} J above its start, beyond "
                      f"{rule.energy_factor:g} x the model's energy scale {scale[b]:.3g} J"
                      f"{_fastest(model, new.v[b])}")
        bad |= high
    diag.diverged = bad
    diag.divergence = why
    return bad


def _fastest(model, v) -> str:
    """", fastest: joint 'x' at 12 rad/s" (the joint whose velocity is largest)."""
    if not model.nv:
        return ""
    body, linear = _dof_joint(model)
    k = int(np.argmax(np.abs(v)))
    return f"; fastest joint {model.joint_names[body[k]]!r} at {abs(v[k]):.3g} {'m/s' if linear[k] else 'rad/s'}"


def check_run(model, q_start, v_start, q, v, rule: DivergenceRule = DEFAULT, control=None, energy_start=None):
    """The rule for the drivers that run many steps in one call (``CpuBatch``, ``CudaBatch``):
    the state ``(q, v)`` reached against the run's start ``(q_start, v_start)``, all (B, n).
    Returns ``(diverged (B,) bool, reasons: list of str or None)``.  A run that diverged and came
    back below the bounds within one call is not seen (the per-step rule of ``Integrator.step``
    and ``rollout`` sees every step).  ``energy_start``: :func:`reference_energy` of the start,
    when the caller keeps it (it is computed otherwise)."""
    from types import SimpleNamespace

    q = np.ascontiguousarray(q, dtype=np.float64)
    v = np.ascontiguousarray(v, dtype=np.float64)
    start = SimpleNamespace(q=np.asarray(q_start, dtype=np.float64), v=np.asarray(v_start, dtype=np.float64),
                            energy_ref=energy_start)
    new = SimpleNamespace(q=q, v=v, energy_ref=None)
    finite = np.isfinite(q).all(axis=1) & np.isfinite(v).all(axis=1)
    e = reference_energy(model, new) - spring_energy(model, q)  # K + U, like Diagnostics.energy
    diag = SimpleNamespace(energy=e, nan=~finite, diverged=None, divergence=None)
    check(model, start, new, diag, rule, control)
    return diag.diverged, diag.divergence
