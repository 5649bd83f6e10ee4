"""The viewer screenshots of docs/body_contact.md: the ``stack3`` scene settled under PBAD at 20 ms,
and the ``gripper`` scene holding its box (euler at 1 ms; fingers squeezed by stable PD, base
lifted 5 cm), contact points, normals and forces shown.  Needs the [viewer] extra and a display or
headless EGL (Mesa).

    python scripts/examples/viewer_body_contact_shots.py [OUT_DIR]   (default docs/img; ~1 min)
"""

import sys
import tempfile
from pathlib import Path

import pbsim_models
from pbsim_viewer.session import Session

import pbsim
from pbsim_viewer import view

out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "docs" / "img")
out.mkdir(parents=True, exist_ok=True)
show = {"show_contacts": True, "show_normals": True, "show_forces": True}

view(
    pbsim_models.by_name("stack3"),
    out / "viewer_stack3.png",
    120,
    integrator="pbad",
    dt=0.02,
    play=True,
    width=900,
    height=600,
    headless=True,
    options=show,
    panel=False,
    camera={"yaw": 35.0, "pitch": 20.0, "distance": 1.8},
)

m = pbsim_models.by_name("gripper")
s = Session(m, scene=pbsim.make_scene(m), integrator="euler", dt=1e-3, kp=0.0, kd=0.0)
for name, kp, kd, target in (
    ("finger_l", 200.0, 2.0, 0.065),
    ("finger_r", 200.0, 2.0, 0.065),
    ("lift", 2e4, 400.0, 0.05),
):
    dof = int(m.iv[m.joint_index(name)])
    s.set_kp(kp, dof)
    s.set_kd(kd, dof)
    s.set_target(dof, target)
for _ in range(1500):
    assert s.step_once(), s.message
key = s.save_keyframe(Path(tempfile.mkdtemp()) / "gripper.npz")
view(
    m,
    out / "viewer_gripper.png",
    3,
    integrator="euler",
    dt=1e-3,
    play=False,
    width=900,
    height=600,
    headless=True,
    options=show,
    panel=False,
    keyframe=key,
    camera={"yaw": 60.0, "pitch": 20.0, "distance": 0.45},
)
print(f"wrote {out / 'viewer_stack3.png'} and {out / 'viewer_gripper.png'}")
