"""Small MJCF models for the contact-between-bodies tests, shared by the test files of the methods
(tests/contact/test_body_contact.py, tests/integrators/test_body_contact_nmdp.py): a two-finger
gripper lifting a box, and a box on a tilted slab carried by a heavy free body.

The files are written into a test's ``tmp_path``; MuJoCo can load every one of them (the oracle)."""

from __future__ import annotations

import numpy as np

FLOOR = '<geom name="floor" type="plane" size="5 5 0.1"/>'

# the gripper: a base on a vertical slide ("lift"), two fingers sliding along y toward the box
# ("finger_l" along -y, "finger_r" along +y: positive = inward), a free 0.5 kg box of 8 cm on the floor
# between them; the fingers' pads are GAP from the box sides at q = 0 and their bottoms 2 cm above the
# floor, the base 3 cm above the box
BOX_HALF = 0.04
BOX_MASS = 0.5
GAP = 0.015
PAD = 0.015  # the fingers' half thickness along y


def gripper_xml(mu: float = 0.5, box_mass: float = BOX_MASS) -> str:
    """The gripper's MJCF (module docstring); ``mu`` the friction of every geom (MuJoCo's default
    takes the pair's largest)."""
    h = BOX_HALF
    y = h + GAP + PAD
    return (
        f'<mujoco model="gripper"><option timestep="0.001"/>'
        f'<default><geom friction="{mu} 0.005 0.0001"/></default><worldbody>{FLOOR}'
        f'<body name="base" pos="0 0 {2 * h + 0.04}"><joint name="lift" type="slide" axis="0 0 1"/>'
        '<geom name="palm" type="box" size="0.04 0.1 0.01" mass="0.5"/>'
        f'<body name="finger_l" pos="0 {y} {h + 0.01 - 2 * h - 0.04}"><joint name="finger_l" type="slide" axis="0 -1 0"/>'
        f'<geom name="pad_l" type="box" size="0.02 {PAD} 0.03" mass="0.1"/></body>'
        f'<body name="finger_r" pos="0 {-y} {h + 0.01 - 2 * h - 0.04}"><joint name="finger_r" type="slide" axis="0 1 0"/>'
        f'<geom name="pad_r" type="box" size="0.02 {PAD} 0.03" mass="0.1"/></body></body>'
        f'<body name="box" pos="0 0 {h}"><freejoint/><geom name="box" type="box" size="{h} {h} {h}" mass="{box_mass}"/>'
        "</body></worldbody></mujoco>"
    )


def gripper(tmp_path, mu: float = 0.5, box_mass: float = BOX_MASS) -> str:
    """The gripper's MJCF written to ``tmp_path``; returns the path."""
    p = tmp_path / "gripper.xml"
    p.write_text(gripper_xml(mu, box_mass))
    return str(p)


def gripper_control(model, squeeze: float, t: float, lift: float = 0.1, t0: float = 0.2, t1: float = 0.6):
    """The gripper's control at time ``t``: plain PD (explicit, at the step's start: its forces do not
    stiffen the step, so the maximal-dissipation methods see the squeeze and the lift as forces);
    each finger pushed inward by ``squeeze`` newtons once it touches the box (its target 10 cm past
    the box side, ``kp = squeeze / 0.1``, lightly damped); the base held at 0 then raised by ``lift``
    m along a smooth ramp from ``t0`` to ``t1`` (``kp`` 1000 N/m, ``kd`` 50 N s/m, the weight of the
    base, the fingers and the box fed forward: held, the base follows the ramp; not held, it
    overshoots by the box's weight / kp, 5 mm).  Stable for explicit PD up to dt = 20 ms."""
    import pbsim

    nv = model.nv
    kp, kd, tau = np.zeros(nv), np.zeros(nv), np.zeros(nv)
    q_ref = model.default_configuration().copy()
    s = min(max((t - t0) / (t1 - t0), 0.0), 1.0)
    for name, gain, damp, target in (
        ("lift", 1000.0, 50.0, lift * s * s * (3.0 - 2.0 * s)),
        ("finger_l", squeeze / 0.1, 1.0, GAP + 0.1),
        ("finger_r", squeeze / 0.1, 1.0, GAP + 0.1),
    ):
        i = model.joint_index(name)
        kp[model.iv[i]], kd[model.iv[i]] = gain, damp
        q_ref[model.iq[i]] = target
    carried = sum(model.mass[model.body_index(b)] for b in ("base", "finger_l", "finger_r", "box"))
    tau[model.iv[model.joint_index("lift")]] = carried * float(np.linalg.norm(model.gravity))
    return pbsim.Control(tau=tau, mode="pd", kp=kp, kd=kd, q_ref=q_ref)


def gripper_lift(model, method, dt, squeeze, T=1.5, scene=None, **options):
    """Squeeze the box with ``squeeze`` N per finger and lift the base by 0.1 m (:func:`gripper_control`)
    for ``T`` s: ``(base rise, box rise, slip = base rise - box rise)`` [m] at the end and the
    trajectory."""
    import pbsim
    from pbsim.contact import make_scene

    sc = make_scene(model) if scene is None else scene
    tr = pbsim.rollout(model, method, dt=dt, steps=int(round(T / dt)), q0=model.default_configuration(), scene=sc,
                       control=lambda t, s: gripper_control(model, squeeze, t), **options)  # fmt: skip
    zb = tr.q[:, model.iq[model.joint_index("lift")]]
    zx = tr.q[:, model.iq[model.body_index("box")] + 2]
    base, box = float(zb[-1] - zb[0]), float(zx[-1] - zx[0])
    return base, box, base - box, tr


def ramp_xml(deg: float, mu: float = 0.5) -> tuple[str, np.ndarray, np.ndarray]:
    """A 0.5 kg box (10 cm) on a slab tilted by ``deg`` about y (1.4 m long), the slab a geom of a
    heavy (50 kg) free body resting flat on the floor; the box starts 0.6 m up the slope, 0.5 mm
    above the slab.  Returns ``(xml, slab normal, down-slope direction)``."""
    a = np.radians(deg)
    n = np.array([np.sin(a), 0.0, np.cos(a)])
    down = np.array([np.cos(a), 0.0, -np.sin(a)])
    c = np.array([0.0, 0.0, 0.55]) + (0.02 + 0.05 + 0.0005) * n - 0.6 * down
    xml = (
        f'<mujoco model="ramp"><option timestep="0.001"/><default><geom friction="{mu} 0.005 0.0001"/></default>'
        f"<worldbody>{FLOOR}"
        '<body name="ramp"><freejoint/><geom name="base" type="box" size="0.8 0.4 0.05" pos="0 0 0.05" mass="40"/>'
        f'<geom name="slab" type="box" size="0.7 0.2 0.02" pos="0 0 0.55" euler="0 {deg} 0" mass="10"/></body>'
        f'<body name="slider" pos="{c[0]} {c[1]} {c[2]}" euler="0 {deg} 0"><freejoint/>'
        '<geom name="slider" type="box" size="0.05 0.05 0.05" mass="0.5"/></body></worldbody></mujoco>'
    )
    return xml, n, down


def ramp(tmp_path, deg: float, mu: float = 0.5):
    """:func:`ramp_xml` written to ``tmp_path``: ``(path, slab normal, down-slope direction)``."""
    xml, n, down = ramp_xml(deg, mu)
    p = tmp_path / f"ramp{deg:g}.xml"
    p.write_text(xml)
    return str(p), n, down


def slide_along(traj, down) -> np.ndarray:
    """The slider's displacement down the slope relative to the ramp body (both free bodies: q[0:3]
    the ramp's, q[7:10] the slider's) over a :func:`ramp` trajectory."""
    P = traj.q[:, 7:10] - traj.q[:, 0:3]
    return (P - P[0]) @ down
