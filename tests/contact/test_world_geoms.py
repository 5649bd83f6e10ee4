"""MJCF worldbody geoms become environment geometry (make_scene(ground="auto"))."""

import numpy as np
import pytest

import pbsim
from conftest import gymnasium_xml
from pbsim.contact import Box, Capsule, MeshTerrain, Plane, Sphere, contact_diagnostics, make_scene, world_environment
from pbsim.rollout import rollout

XML = """<mujoco>
  <asset><mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" pos="0 0 0.3" euler="10 0 0"/>
    <geom name="blk" type="box" size="0.1 0.2 0.3" pos="1 2 0.5" euler="0 0 30"/>
    <geom name="ball" type="sphere" size="0.25" pos="-1 0 0.4"/>
    <geom name="rod" type="capsule" fromto="0 -1 0.2 0 -1 0.8" size="0.05"/>
    <geom name="tet" type="mesh" mesh="tet" pos="2 -2 0"/>
    <geom name="deco" type="box" size="1 1 1" contype="0" conaffinity="0"/>
    <body name="b" pos="0 0 2"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
  </worldbody>
</mujoco>"""


def test_world_geoms_become_environment(tmp_path):
    import mujoco

    f = tmp_path / "w.xml"
    f.write_text(XML)
    m = pbsim.load(str(f))
    env, skipped = world_environment(m, spacing=0.05)
    assert skipped == []
    kinds = [type(e) for e in env]
    assert kinds == [Plane, Box, Sphere, Capsule, MeshTerrain]  # "deco" (no collision) left out
    # oracle: MuJoCo's compiled world placement of each geom
    mj = mujoco.MjModel.from_xml_path(str(f))
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    gid = {n: mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_GEOM, n) for n in ("floor", "blk", "ball", "rod")}
    Rf = d.geom_xmat[gid["floor"]].reshape(3, 3)
    assert np.allclose(env[0].normal, Rf[:, 2], atol=1e-12)
    assert abs(env[0].offset - Rf[:, 2] @ d.geom_xpos[gid["floor"]]) < 1e-12
    assert np.allclose(env[1].R, d.geom_xmat[gid["blk"]].reshape(3, 3), atol=1e-12)
    assert np.allclose(env[1].p, [1, 2, 0.5]) and np.allclose(env[1].half, [0.1, 0.2, 0.3])
    assert np.allclose(env[2].center, [-1, 0, 0.4]) and env[2].radius == 0.25
    assert np.allclose(np.sort([env[3].a[2], env[3].b[2]]), [0.2, 0.8], atol=1e-12) and env[3].radius == 0.05
    assert env[4].closed  # the tetrahedron is watertight
    sc = make_scene(m, spacing=0.05)
    assert [type(e) for e in sc.environment] == kinds
    assert [type(e) for e in make_scene(m, ground="plane").environment] == [Plane]
    assert make_scene(m, ground=None).environment == []
    from pbsim.contact import ContactInputError

    with pytest.raises(ContactInputError, match="ground must be"):
        make_scene(m, ground="floor")


def test_ant_falls_onto_its_floor_and_rests():
    """gymnasium's ant.xml has a floor plane at z = 0: with ground="auto" (the default) the ant,
    released at its qpos0 (torso at 0.75 m), falls onto it and comes to rest on its legs (capsules
    r = 0.08) held by their joint limits; without the floor it falls through.  (Before joint limits
    were simulated it rested on its torso sphere, z = 0.25 -- the legs splayed flat through their
    limits.)  Its ankles start 0.52 rad outside their range: MuJoCo's limit law (euler's) launches
    them off it, and the height it rests at is set by how far the feet then slide.  MuJoCo 4.0
    (Euler at 1 / 2 ms, 4 s): 0.533 / 0.557 m, the ankles at 0.87 / 0.94 rad inside their 0.52-1.22
    range, held by exact stiction; pbsim's penalty friction lets the feet creep (0.42 m at 4 s) until
    the ankles are back on their limit at ~5.2 s: 0.358 m (rk4 the same).  The bound is that of a
    standing ant: above its lying height, below its legs' reach (0.6 m, MuJoCo's included; it was
    0.33-0.40 around a MuJoCo figure of 0.382 m the current MuJoCo no longer gives).  At rest the
    penalty friction chatters from step to step (the torso's yaw rate alternates +-0.031 rad/s at
    2 ms, +-0.013 at 1 ms, q moves 6e-5 rad and back; the same from this pose under pbsim's spring
    limit law): rest is the velocity averaged over two steps, and the chatter is bounded."""
    m = pbsim.load(gymnasium_xml("ant.xml"))
    sc = make_scene(m)
    assert len(sc.environment) == 1 and isinstance(sc.environment[0], Plane)
    assert np.allclose(sc.environment[0].normal, [0, 0, 1]) and sc.environment[0].offset == 0.0
    q0 = m.q_default.copy()
    tr = rollout(m, "euler", 2e-3, 3000, q0=q0, scene=sc, record_every=1)
    assert np.isfinite(tr.q).all()
    z = tr.q[:, 2]
    D = 4 * 0.005  # n_ref delta_ref (pbsim.contact.scene)
    bound = D * (1 + np.sqrt(1 + 2 * 0.5 / D))  # impact bound for a 0.5 m fall (drop_robots.py)
    assert z[1:].min() > 0.25 - bound  # the torso never sinks through
    assert 0.33 < z[-1] < 0.60  # standing on its legs (MuJoCo: 0.53-0.56)
    assert np.abs(tr.v[-1] + tr.v[-2]).max() / 2 < 1e-3 and np.abs(tr.v[-1]).max() < 0.05  # at rest (doc)
    dg = contact_diagnostics(m, sc, tr.q[-1])
    assert dg["active"][0] >= 1 and dg["max_penetration"][0] <= 0.0201
    free = rollout(m, "euler", 2e-3, 300, q0=q0, scene=make_scene(m, ground=None), record_every=300)
    assert free.q[-1, 2] < -0.2  # no floor: it falls through (free fall from 0.75 m reaches -1.0 m at 0.6 s)
