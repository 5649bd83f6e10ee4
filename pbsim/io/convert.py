"""Robot file conversion through the Model: URDF <-> MJCF (``pbsim convert IN OUT``).

``convert`` reads ``in_path`` with :func:`pbsim.load`, writes ``out_path`` with
:func:`~pbsim.io.export_urdf.write_urdf` or :func:`~pbsim.io.export_mjcf.write_mjcf` (by
extension), copies or converts every mesh into ``meshes/`` next to the output (trimesh), and
returns a :class:`ConvertReport` listing what the target format (or pbsim's Model) could not
represent.  ``dynamics_error`` and ``mujoco_dynamics_error`` are the checks the tests use: mass
matrix and ABA of two models (or of a model and MuJoCo's compilation of an MJCF) at random
states, with joints matched by name.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

import numpy as np

from pbsim.dynamics.joints import FREE
from pbsim.errors import ParseError

URDF_MESH_FORMATS = (".stl", ".obj", ".dae")
MJCF_MESH_FORMATS = (".stl", ".obj")


@dataclass
class ConvertReport:
    """What ``convert`` did and what it could not carry over."""

    in_path: str
    out_path: str
    nq: int = 0
    nv: int = 0
    nbodies: int = 0
    meshes: list[tuple[str, str]] = field(default_factory=list)  # (source, written)
    lost: list[str] = field(default_factory=list)  # not representable in the target (or the Model)
    notes: list[str] = field(default_factory=list)  # what the reader assumed (Model.notes)
    actions: list[str] = field(default_factory=list)  # what convert changed (simplified meshes ...)

    def __str__(self):
        rows = [
            f"converted {self.in_path} -> {self.out_path}",
            f"  {self.nbodies} bodies, nq {self.nq}, nv {self.nv}, {len(self.meshes)} mesh file(s) written",
        ]
        for src, dst in self.meshes:
            rows.append(f"  mesh {src} -> {dst}")
        for n in self.notes:
            rows.append(f"  reader note: {n}")
        for n in self.actions:
            rows.append(f"  {n}")
        if self.lost:
            rows.append(f"  not represented in the output ({len(self.lost)}):")
            rows += [f"  - {x}" for x in self.lost]
        else:
            rows.append("  everything in the model is represented in the output")
        return "\n".join(rows)


def _target(out_path: str) -> str:
    ext = os.path.splitext(out_path)[1].lower()
    if ext == ".urdf":
        return "urdf"
    if ext in (".xml", ".mjcf"):
        return "mjcf"
    raise ParseError(f"{out_path}: unknown output type {ext!r} (expected .urdf, .xml or .mjcf)")


# ---------------------------------------------------------------------- source-format extras
def _nonzero(text) -> bool:
    try:
        return float(text) != 0.0
    except (TypeError, ValueError):
        return True


def _source_extras(in_path: str) -> list[str]:
    """Elements of the input file that pbsim's Model has no place for."""
    from lxml import etree

    lost = []
    ext = os.path.splitext(in_path)[1].lower()
    try:
        with open(in_path, "rb") as f:
            data = f.read()
        end = data.rfind(b"</robot>")
        if end >= 0:
            data = data[: end + len(b"</robot>")]
        root = etree.fromstring(data, parser=etree.XMLParser(remove_comments=True, recover=True))
    except Exception:  # the reader already accepted the file; extras are best effort
        return lost
    if root is None:
        return lost
    if ext == ".urdf":
        for tag, what in (
            ("transmission", "transmissions"),
            ("gazebo", "<gazebo> extensions"),
            ("joint/safety_controller", "safety controllers"),
            ("joint/calibration", "joint calibrations"),
            ("joint/dynamics[@friction]", "joint friction (dynamics/@friction)"),
            (".//texture", "material textures"),
        ):
            els = root.findall(tag)
            if "friction" in tag:
                els = [e for e in els if _nonzero(e.get("friction"))]
            n = len(els)
            if n:
                lost.append(f"source URDF: {n} {what} are not part of pbsim's Model")
    else:
        try:
            import mujoco

            mj = mujoco.MjModel.from_xml_path(in_path)
        except Exception:
            mj = None
        if mj is not None:
            for n, what in (
                (mj.ntendon, "tendons"),
                (mj.nu, "actuators"),
                (mj.neq, "equality constraints"),
                (mj.nsensor, "sensors"),
                (mj.nkey, "keyframes"),
            ):
                if n:
                    lost.append(f"source MJCF: {n} {what} are not part of pbsim's Model")
            if np.any(mj.jnt_stiffness):
                lost.append("source MJCF: joint stiffness (springs) is not part of pbsim's Model")
            if np.any(mj.dof_frictionloss):
                lost.append("source MJCF: joint frictionloss is not part of pbsim's Model")
            gt = set(int(t) for t in mj.geom_type)
            for code, name in (
                (int(mujoco.mjtGeom.mjGEOM_ELLIPSOID), "ellipsoid"),
                (int(mujoco.mjtGeom.mjGEOM_HFIELD), "height field"),
                (int(mujoco.mjtGeom.mjGEOM_SDF), "SDF"),
            ):
                if code in gt:
                    lost.append(f"source MJCF: {name} geoms have no pbsim shape")
    return lost


# ---------------------------------------------------------------------- meshes
def simplify_mesh(mesh, faces: int):
    """``mesh`` with at most ``faces`` triangles: quadric decimation when ``fast_simplification``
    is installed, otherwise vertex clustering on a grid refined until the budget is met."""
    import trimesh

    if len(mesh.faces) <= faces:
        return mesh
    try:
        out = mesh.simplify_quadric_decimation(face_count=int(faces))
        if len(out.faces) <= faces and len(out.faces) > 0:
            return out
    except Exception:  # no fast_simplification: fall back to clustering
        pass
    lo, hi = mesh.bounds
    ext = float(np.max(hi - lo)) or 1.0
    best = None
    for cells in (256, 128, 96, 64, 48, 32, 24, 16, 12, 8, 6, 4, 3, 2):
        h = ext / cells
        key = np.floor((mesh.vertices - lo) / h).astype(np.int64)
        _, inv = np.unique(key, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        nv = inv.max() + 1
        verts = np.zeros((nv, 3))
        np.add.at(verts, inv, mesh.vertices)
        verts /= np.bincount(inv, minlength=nv)[:, None]
        f = inv[mesh.faces]
        keep = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])
        f = np.unique(np.sort(f[keep], axis=1), axis=0, return_index=True)[1]
        fk = inv[mesh.faces][keep][np.sort(f)]
        best = trimesh.Trimesh(verts, fk, process=True)
        if len(best.faces) <= faces:
            break
    return best


def _write_meshes(model, out_path, target, mesh_format, convex_hull, simplify, report):
    """Copy or convert every mesh next to ``out_path``; returns {geom index: relative filename}."""
    import trimesh

    if mesh_format is not None:
        mesh_format = "." + mesh_format.lower().lstrip(".")
        if mesh_format not in MJCF_MESH_FORMATS:
            raise ValueError(f"mesh_format {mesh_format!r}: expected 'stl' or 'obj'")
    allowed = URDF_MESH_FORMATS if target == "urdf" else MJCF_MESH_FORMATS
    out_dir = os.path.dirname(os.path.abspath(out_path))
    rel_dir = "meshes"
    done: dict[tuple, str] = {}
    used: set[str] = set()
    mapping: dict[int, str] = {}
    nhull = 0
    for idx, g in enumerate(model.geoms):
        if g.shape != "mesh" or not (g.mesh_path or g.mesh_data is not None):
            continue
        hull = bool(convex_hull and g.role != "visual")
        if g.mesh_path:
            src = os.path.abspath(g.mesh_path)
            ext = os.path.splitext(src)[1].lower()
        else:  # a mesh held in memory (an MJCF <mesh> compiled by MuJoCo): written out as a file
            data = (np.ascontiguousarray(g.mesh_data[0], float), np.ascontiguousarray(g.mesh_data[1], np.int64))
            src = f"<{g.name or g.link or 'mesh'} in memory>"
            ext = ""
        fmt_out = mesh_format or (ext if ext in allowed else ".stl")
        key = (src if g.mesh_path else (data[0].tobytes(), data[1].tobytes()), hull, simplify, fmt_out)
        if key in done:
            mapping[idx] = done[key]
            continue
        stem = os.path.splitext(os.path.basename(src))[0] if g.mesh_path else _safe_stem(g.name or g.link or "mesh")
        stem += "_hull" if hull else ""
        stem += f"_{simplify}f" if simplify else ""
        name, k = stem + fmt_out, 1
        while name.lower() in used:
            name = f"{stem}_{k}{fmt_out}"
            k += 1
        used.add(name.lower())
        os.makedirs(os.path.join(out_dir, rel_dir), exist_ok=True)
        dst = os.path.join(out_dir, rel_dir, name)
        from pbsim.io.export_mjcf import is_ascii_stl

        ascii_bad = bool(g.mesh_path) and target == "mjcf" and is_ascii_stl(src)
        if g.mesh_path and fmt_out == ext and not hull and not simplify and not ascii_bad:
            if os.path.abspath(dst) != src:
                shutil.copyfile(src, dst)
        else:
            if g.mesh_path:
                mesh = trimesh.load(src, force="mesh", process=False)
            else:
                mesh = trimesh.Trimesh(data[0], data[1], process=False)
            if hull:
                mesh = mesh.convex_hull
                nhull += 1
            if simplify:
                n0 = len(mesh.faces)
                mesh = simplify_mesh(mesh, int(simplify))
                if len(mesh.faces) < n0:
                    report.actions.append(f"mesh {os.path.basename(src)}: {n0} -> {len(mesh.faces)} faces")
            mesh.export(dst)
        rel = f"{rel_dir}/{name}"
        done[key] = rel
        mapping[idx] = rel
        report.meshes.append((src, rel))
    if nhull:
        report.actions.append(f"{nhull} collision mesh(es) replaced by their convex hulls (visual meshes kept)")
    return mapping


def _safe_stem(name: str) -> str:
    """A file-name stem from a geom/link name (letters, digits, '-', '_', '.')."""
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return stem or "mesh"


# ---------------------------------------------------------------------- main entry
def convert(
    in_path,
    out_path,
    mesh_format: str | None = "stl",
    convex_hull: bool = False,
    simplify: int | None = None,
    floating_base: bool | None = None,
    verbose: bool = False,
    capsules: str = "capsule",
    **load_kw,
) -> ConvertReport:
    """Convert a robot file (URDF or MJCF), or a :class:`~pbsim.model.model.Model` built in
    code, into a robot file (URDF or MJCF, by ``out_path``'s extension).

    ``mesh_format``: "stl" (default) or "obj" for every mesh written next to the output, or None
    to copy meshes the target reads as they are (URDF: STL/OBJ/DAE, MJCF: STL/OBJ) and convert
    the rest to STL.  ``convex_hull``: replace collision meshes by their convex hulls.
    ``simplify``: at most this many faces per mesh.  ``floating_base`` and ``load_kw`` go to
    :func:`pbsim.load`.  ``capsules`` (URDF output): "capsule" (pybullet dialect) or
    "cylinder+spheres" (standard shapes).  Returns (and with ``verbose`` prints) a
    :class:`ConvertReport`.
    """
    from pbsim.io import load
    from pbsim.io.export_mjcf import write_mjcf
    from pbsim.io.export_urdf import write_urdf

    from pbsim.model.model import Model

    out_path = str(out_path)
    target = _target(out_path)
    if simplify is not None and int(simplify) < 4:
        raise ValueError(f"simplify={simplify}: a mesh needs at least 4 faces")
    if isinstance(in_path, Model):  # a model built in code (pbsim_models.by_name("chain10") ...)
        if floating_base is not None or load_kw:
            raise ValueError("floating_base and load options apply to a file, not to a Model")
        model, in_path = in_path, in_path.name
    else:
        in_path = str(in_path)
        model = load(in_path, floating_base=floating_base, **load_kw)
    rep = ConvertReport(in_path, out_path, model.nq, model.nv, model.nb, notes=list(model.notes))
    if os.path.isfile(in_path):
        rep.lost += _source_extras(in_path)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    meshes = _write_meshes(model, out_path, target, mesh_format, convex_hull, simplify, rep)
    if target == "urdf":
        rep.lost += write_urdf(model, out_path, mesh_paths=meshes, capsules=capsules)
    else:
        rep.lost += write_mjcf(model, out_path, mesh_paths=meshes)
    if verbose:
        print(rep)
    return rep


# ---------------------------------------------------------------------- checks
def _joint_maps(a, b):
    """q and v index maps from model ``a`` to model ``b`` by joint name (same joint types)."""
    qa, qb, va, vb = [], [], [], []
    for i, n in enumerate(a.joint_names):
        j = b.joint_index(n)
        if a.jtype[i] != b.jtype[j]:
            raise ValueError(f"joint {n!r}: type {a.joint_type_name(i)} vs {b.joint_type_name(j)}")
        qa += range(a.iq[i], a.iq[i] + a.nqj[i])
        qb += range(b.iq[j], b.iq[j] + b.nqj[j])
        va += range(a.iv[i], a.iv[i] + a.nvj[i])
        vb += range(b.iv[j], b.iv[j] + b.nvj[j])
    if len(qb) != b.nq:
        raise ValueError(f"model {b.name!r} has joints that {a.name!r} lacks")
    return np.array(qa), np.array(qb), np.array(va), np.array(vb)


def dynamics_error(a, b, nstates: int = 20, rng=0, ignore_armature: bool = False) -> float:
    """Largest relative difference of the mass matrix and of ABA between models ``a`` and
    ``b`` at ``nstates`` random states (joints matched by name; free joints compared at the
    same world pose, so their placements may differ).  ``ignore_armature`` compares ``M - diag(armature)`` of each (URDF has none) and
    ABA with ``a``'s armature added to ``b``."""
    import dataclasses

    from pbsim.dynamics.api import aba, crba

    from pbsim.io.export_urdf import quat_to_rot, rot_to_quat

    qa, qb, va, vb = _joint_maps(a, b)
    free = [(i, b.joint_index(n)) for i, n in enumerate(a.joint_names) if a.jtype[i] == FREE]
    if ignore_armature:
        arm = np.zeros(b.nv)
        arm[vb] = a.armature[va]
        b = dataclasses.replace(b, armature=arm)
    rng = np.random.default_rng(rng)
    err = 0.0
    for _ in range(nstates):
        q = a.random_configuration(rng)
        v = rng.normal(size=a.nv)
        tau = rng.normal(size=a.nv)
        q2 = np.zeros(b.nq)
        q2[qb] = q[qa]
        for i, j in free:  # same world pose: tree_b o q_b = tree_a o q_a
            ka, kb = a.iq[i], b.iq[j]
            Rw = a.tree_R[i] @ quat_to_rot(q[ka + 3 : ka + 7])
            pw = a.tree_p[i] + a.tree_R[i] @ q[ka : ka + 3]
            q2[kb : kb + 3] = b.tree_R[j].T @ (pw - b.tree_p[j])
            q2[kb + 3 : kb + 7] = rot_to_quat(b.tree_R[j].T @ Rw)
        v2, t2 = np.zeros(b.nv), np.zeros(b.nv)
        v2[vb], t2[vb] = v[va], tau[va]
        Ma = crba(a, q)
        Mb = crba(b, q2)[np.ix_(vb, vb)]
        err = max(err, np.abs(Ma - Mb).max() / max(np.abs(Ma).max(), 1e-300))
        aa = aba(a, q, v, tau)
        ab = aba(b, q2, v2, t2)[vb]
        err = max(err, np.abs(aa - ab).max() / max(np.abs(aa).max(), 1.0))
    return float(err)


def mujoco_dynamics_error(model, xml_path, nstates: int = 20, rng=0) -> float:
    """Largest relative difference between ``model`` and MuJoCo's compilation of ``xml_path``
    (mass matrix from ``mj_fullM``, inverse dynamics ``mj_rne`` with random accelerations, against
    ``crba`` and ``rnea``) at random states; relative to the largest entry (torques: or 1).

    MuJoCo's free joint: qpos = world pose (w,x,y,z), qvel = [world linear, body angular]; ours:
    placement (tree) composed with q, v = [body linear, body angular]."""
    import mujoco

    from pbsim.dynamics.api import crba, rnea
    from pbsim.io.export_urdf import quat_to_rot, rot_to_quat

    mj = mujoco.MjModel.from_xml_path(str(xml_path))
    d = mujoco.MjData(mj)
    if mj.nv != model.nv or mj.nq != model.nq:
        raise ValueError(f"MuJoCo nq/nv {mj.nq}/{mj.nv} vs model {model.nq}/{model.nv}")
    rng = np.random.default_rng(rng)
    err = 0.0
    adr = []
    for n in model.joint_names:
        jid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, n)
        if jid < 0:
            raise ValueError(f"MuJoCo model has no joint {n!r}")
        adr.append((int(mj.jnt_qposadr[jid]), int(mj.jnt_dofadr[jid])))
    for _ in range(nstates):
        q = model.random_configuration(rng)
        v = rng.normal(size=model.nv)
        qpos = np.zeros(mj.nq)
        T = np.zeros((model.nv, model.nv))  # v_ours = T v_mj
        Tdv = np.zeros(model.nv)  # Tdot v_mj
        v_mj = np.zeros(model.nv)
        for i in range(model.nb):
            k, j = int(model.iq[i]), int(model.iv[i])
            qa, da = adr[i]
            nq, nv = int(model.nqj[i]), int(model.nvj[i])
            if model.jtype[i] == FREE:
                R = model.tree_R[i] @ quat_to_rot(q[k + 3 : k + 7])
                qpos[qa : qa + 3] = model.tree_p[i] + model.tree_R[i] @ q[k : k + 3]
                qpos[qa + 3 : qa + 7] = rot_to_quat(R)
                T[j : j + 3, da : da + 3] = R.T
                T[j + 3 : j + 6, da + 3 : da + 6] = np.eye(3)
                v_mj[da : da + 3] = R @ v[j : j + 3]
                v_mj[da + 3 : da + 6] = v[j + 3 : j + 6]
                Tdv[j : j + 3] = -np.cross(v[j + 3 : j + 6], v[j : j + 3])
            else:
                qpos[qa : qa + nq] = q[k : k + nq]
                T[j : j + nv, da : da + nv] = np.eye(nv)
                v_mj[da : da + nv] = v[j : j + nv]
        d.qpos[:] = qpos
        d.qvel[:] = v_mj
        a_mj = rng.normal(size=model.nv)
        d.qacc[:] = a_mj
        mujoco.mj_forward(mj, d)
        d.qacc[:] = a_mj  # mj_forward overwrote it
        Mmj = np.zeros((mj.nv, mj.nv))
        if hasattr(d, "qM"):
            mujoco.mj_fullM(mj, Mmj, d.qM)
        else:  # MuJoCo >= 4
            mujoco.mj_fullM(mj, d, Mmj)
        tau_mj = np.zeros(mj.nv)
        mujoco.mj_rne(mj, d, 1, tau_mj)  # rigid-body M a + bias (gravity, Coriolis), no passive forces
        tau_mj += mj.dof_armature * a_mj  # mj_rne leaves armature out; pbsim's rnea has it
        M = crba(model, q)
        Mpred = T.T @ M @ T
        err = max(err, np.abs(Mpred - Mmj).max() / np.abs(Mmj).max())
        tau = rnea(model, q, v, T @ a_mj + Tdv)
        err = max(err, np.abs(T.T @ tau - tau_mj).max() / max(np.abs(tau_mj).max(), 1.0))
    return float(err)


__all__ = ["convert", "ConvertReport", "dynamics_error", "mujoco_dynamics_error", "simplify_mesh"]
