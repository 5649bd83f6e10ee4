"""Small MJCF scenes of touching bodies (``stack3``, ``gripper``), by name in the CLI and viewer:

    pbsim view stack3 --integrator pbad --dt 0.05
    pbsim view gripper

``stack3``: three boxes (20, 16, 12 cm, yawed) dropped onto each other and a ball onto the top,
on a floor.  ``gripper``: a base on a vertical slide with two fingers sliding toward a 0.5 kg
box on the floor (drive it with stable PD on ``finger_l``, ``finger_r``, ``lift``).
"""

from __future__ import annotations

FLOOR = '<geom name="floor" type="plane" size="5 5 0.1" rgba="0.85 0.87 0.9 1"/>'


def _box(name, z, half, mass, yaw, rgba):
    return (
        f'<body name="{name}" pos="0 0 {z}" euler="0 0 {yaw}"><freejoint/>'
        f'<geom name="{name}" type="box" size="{half} {half} {half}" mass="{mass}" rgba="{rgba}"/></body>'
    )


STACK3 = (
    '<mujoco model="stack3"><worldbody>'
    + FLOOR
    + _box("b1", 0.1, 0.1, 1.0, 0, "0.8 0.45 0.2 1")
    + _box("b2", 0.3, 0.08, 0.6, 25, "0.3 0.55 0.8 1")
    + _box("b3", 0.47, 0.06, 0.3, -15, "0.4 0.7 0.35 1")
    + '<body name="ball" pos="0.01 0 0.62"><freejoint/><geom name="ball" type="sphere" size="0.04" mass="0.1" '
    'rgba="0.85 0.3 0.3 1"/></body></worldbody></mujoco>'
)

GRIPPER = (
    '<mujoco model="gripper"><default><geom friction="0.5 0.005 0.0001"/></default><worldbody>'
    + FLOOR
    + '<body name="base" pos="0 0 0.12"><joint name="lift" type="slide" axis="0 0 1"/>'
    '<geom name="palm" type="box" size="0.04 0.1 0.01" mass="0.5" rgba="0.55 0.6 0.7 1"/>'
    '<body name="finger_l" pos="0 0.07 -0.07"><joint name="finger_l" type="slide" axis="0 -1 0"/>'
    '<geom name="pad_l" type="box" size="0.02 0.015 0.03" mass="0.1" rgba="0.65 0.65 0.7 1"/></body>'
    '<body name="finger_r" pos="0 -0.07 -0.07"><joint name="finger_r" type="slide" axis="0 1 0"/>'
    '<geom name="pad_r" type="box" size="0.02 0.015 0.03" mass="0.1" rgba="0.65 0.65 0.7 1"/></body></body>'
    '<body name="box" pos="0 0 0.04"><freejoint/><geom name="box" type="box" size="0.04 0.04 0.04" mass="0.5" '
    'rgba="0.8 0.45 0.2 1"/></body></worldbody></mujoco>'
)

SCENES = {"stack3": STACK3, "gripper": GRIPPER}


def scene(name: str):
    """The :class:`pbsim.Model` of scene ``name`` (compiled by MuJoCo from the text above)."""
    import mujoco

    from pbsim.io.mjcf import model_from_mjmodel

    return model_from_mjmodel(mujoco.MjModel.from_xml_string(SCENES[name]), source=f"{name}.xml")
