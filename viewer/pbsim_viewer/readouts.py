"""What the panel and overlays read off a session: tracking error, buffer verdicts, body info, contact forces, histories."""

from __future__ import annotations

import math

import numpy as np

import pbsim


class SessionReadouts:
    """The read-only views of a session's state (a mixin of :class:`~pbsim_viewer.session.Session`)."""

    def tracking_error(self, q=None) -> float:
        """RMS over actuated DOFs of ``q (-) q_ref`` (rad or m)."""
        q = self.q if q is None else q
        n = int(self.actuated.sum())
        if n == 0:
            return 0.0
        r = self.q_ref
        # numpy on purpose (called every step): |q (-) q_ref|^2 is (dq)^2 per 1-DOF joint and
        # the squared relative rotation angle per ball joint
        sq = float(np.sum((q[self._err_1dof] - r[self._err_1dof]) ** 2))
        for k in self._err_ball:
            c = abs(
                float(np.dot(q[k : k + 4], r[k : k + 4]))
                / max(np.linalg.norm(q[k : k + 4]) * np.linalg.norm(r[k : k + 4]), 1e-300)
            )
            sq += (2.0 * math.acos(min(c, 1.0))) ** 2
        return math.sqrt(sq / n)

    def ring_verdicts(self) -> np.ndarray:
        """(len(ring),) True where a buffered state satisfies the shared divergence rule
        (:mod:`pbsim.integrators.divergence`) in its strict form: finite, every joint speed within
        the limit, and ``K + U`` at most ``energy_factor * E_model`` above the run's reference
        energy (the one the state carries; the allowance for what the actuators could add is
        left out, so a state the gains pumped full of energy does not count as good)."""
        from pbsim.integrators import divergence as dv

        states = [st for st, _ in self.ring]
        if not states:
            return np.zeros(0, bool)
        rule = getattr(self._integrator, "divergence", dv.DEFAULT)
        q = np.concatenate([st.q for st in states])
        v = np.concatenate([st.v for st in states])
        ok = np.isfinite(q).all(1) & np.isfinite(v).all(1)
        if v.size:
            ok &= np.where(ok, np.abs(np.nan_to_num(v, nan=np.inf)).max(1), np.inf) <= rule.speed_limit
        ref = np.array([np.nan if st.energy_ref is None else float(np.ravel(st.energy_ref)[0]) for st in states])
        good = np.flatnonzero(ok)
        if len(good) and rule.energy_factor is not None:
            from types import SimpleNamespace

            sub = SimpleNamespace(q=q[good], v=v[good])
            e = dv.reference_energy(self.model, sub) - dv.spring_energy(self.model, q[good])  # K + U
            r = ref[good]
            # a state without a reference (the first of a run) is its own reference
            r = np.where(np.isfinite(r), r, e + dv.spring_energy(self.model, q[good]))
            ok[good] = e - r <= rule.energy_factor * dv.energy_scale(self.model)
        return ok

    # ------------------------------------------------------------------ inspection
    def body_info(self, body: int) -> dict:
        """Name, mass, world pose and the contact forces on ``body`` at the current state.  The
        contact forces are the scene's penalty law (spring-damper normal force and regularized
        Coulomb friction, :mod:`pbsim.contact.penalty`): what the explicit methods apply; the
        implicit and position-based methods solve their own contact forces."""
        m = self.model
        b = int(body)
        T = pbsim.forward_kinematics(m, self.q)[b]
        return {
            "body": b,
            "name": m.body_names[b],
            "mass": float(m.mass[b]),
            "position": T[:3, 3].copy(),
            "rotation": T[:3, :3].copy(),
            "contacts": [c for c in self.contact_forces() if c["body"] == b],
        }

    def contact_forces(self) -> list[dict]:
        """Active contacts with the scene's penalty force: dicts of body, point (world), normal,
        depth, force (world, N); between two bodies also ``other`` (the body the force's reaction
        acts on, -1: the environment)."""
        sc = self.scene
        try:
            ks = sc.kernel_arrays(self.model)
        except Exception:  # noqa: BLE001 - no contact geometry
            return []
        out = self._pair_forces(ks) if ks.nitem else []
        if ks.npts == 0:
            return out
        r = pbsim.contact_query(self.model, sc, self.q)
        X, D, N, dD = r["X"][0], r["d"][0], r["n"][0], r["dd_dv"][0]
        v = self.state.v[0]
        T = None
        for k in np.flatnonzero(D > 0):
            body = int(ks.pt_body[k])
            n = N[k]
            c = X[k] - ks.pt_radius[k] * n
            un = -float(dD[k] @ v)  # dd/dv = -n^T J: the normal speed of the point
            fn = float(ks.pt_k[k] * D[k] - ks.pt_c[k] * un)
            if fn <= 0:
                continue
            if T is None:
                T = pbsim.forward_kinematics(self.model, self.q)
            local = T[body, :3, :3].T @ (c - T[body, :3, 3])
            u = pbsim.point_jacobian(self.model, self.q, body, local)[3:] @ v
            ut = u - float(u @ n) * n
            ft = -ks.mu * fn * ut / math.sqrt(float(ut @ ut) + ks.friction_eps**2)
            out.append(
                {"body": body, "other": -1, "point": c, "normal": n.copy(), "depth": float(D[k]), "force": fn * n + ft}
            )
        return out

    def _pair_forces(self, ks) -> list[dict]:
        """The penalty force of every touching body-body point (:func:`pbsim.contact.pair_contacts`),
        on body A (the reaction on ``other``) at the point's surface, with the relative velocity."""
        from pbsim.contact import pair_contacts

        r = pair_contacts(self.model, ks, self.q)
        T = pbsim.forward_kinematics(self.model, self.q)
        v = self.state.v[0]
        out = []
        for k in range(len(r["depth"])):
            a, b, n = int(r["body_a"][k]), int(r["body_b"][k]), r["normal"][k]
            c = r["x"][k] - r["radius"][k] * n
            u = np.zeros(3)
            for body, sign in ((a, 1.0), (b, -1.0)):
                local = T[body, :3, :3].T @ (c - T[body, :3, 3])
                u += sign * (pbsim.point_jacobian(self.model, self.q, body, local)[3:] @ v)
            un = float(u @ n)
            fn = float(r["k"][k] * r["depth"][k] - r["c"][k] * un)
            if fn <= 0:
                continue
            ut = u - un * n
            ft = -r["mu"][k] * fn * ut / math.sqrt(float(ut @ ut) + ks.friction_eps**2)
            out.append(
                {
                    "body": a,
                    "other": b,
                    "point": c,
                    "normal": n.copy(),
                    "depth": float(r["depth"][k]),
                    "force": fn * n + ft,
                }
            )
        return out

    def histories(self) -> dict[str, np.ndarray]:
        return {
            "t": np.array(self.hist_t),
            "energy": np.array(self.hist_energy),
            "iterations": np.array(self.hist_iters),
            "tracking_error": np.array(self.hist_err),
        }
