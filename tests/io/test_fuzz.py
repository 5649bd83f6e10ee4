"""Fuzzing both parsers (issue #19): mutated URDF and MJCF files, generated here and taken from
pybullet_data and gymnasium, either load into a model whose dynamics at its default
configuration is finite (ABA, CRBA, RNEA, energy) or are refused with a ``PbsimError``;
anything else (another exception, a NaN) fails.

CI budget: ``PBSIM_FUZZ_EXAMPLES`` inputs per parser (default 300, ~15 s each on the 2-core CI
machine); a long run: ``PBSIM_FUZZ_EXAMPLES=10000 pytest tests/io/test_fuzz.py`` (figures in
docs/reliability.md).
"""

from __future__ import annotations

import os
import re
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pbsim  # noqa: E402
from pbsim.errors import PbsimError  # noqa: E402

EXAMPLES = int(os.environ.get("PBSIM_FUZZ_EXAMPLES", "300"))
# appended chains: 2000 deep only in long runs (a 2000-link URDF takes seconds to load; the
# 10,000-link chain has its own test in tests/test_reliability.py)
DEPTHS = [10, 200, 2000] if os.environ.get("PBSIM_FUZZ_EXAMPLES") else [10, 200]
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("PBSIM_FUZZ_RANDOM"),  # CI: the same inputs every run
    suppress_health_check=list(HealthCheck),
    database=None,
)

GEN_URDF = """<?xml version="1.0"?>
<robot name="gen">
  <link name="base"><inertial><origin xyz="0 0 0.05" rpy="0 0 0"/><mass value="2.0"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial>
    <collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <link name="upper"><inertial><origin xyz="0 0 0.15"/><mass value="1.0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.001"/></inertial>
    <visual><origin xyz="0 0 0.15"/><geometry><cylinder radius="0.03" length="0.3"/></geometry></visual></link>
  <link name="lower"><inertial><origin xyz="0 0 0.1"/><mass value="0.5"/>
    <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.0005"/></inertial>
    <collision><geometry><sphere radius="0.04"/></geometry></collision></link>
  <link name="slider"><inertial><mass value="0.2"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <link name="ball"><inertial><mass value="0.1"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <link name="tool"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.1" rpy="0 0.1 0"/><axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" effort="50" velocity="5"/><dynamics damping="0.1" friction="0.01"/></joint>
  <joint name="elbow" type="continuous"><parent link="upper"/><child link="lower"/>
    <origin xyz="0 0 0.3"/><axis xyz="1 0 0"/></joint>
  <joint name="slide" type="prismatic"><parent link="lower"/><child link="slider"/>
    <origin xyz="0 0 0.2"/><axis xyz="0 0 1"/><limit lower="0" upper="0.1" effort="10" velocity="1"/></joint>
  <joint name="wrist" type="spherical"><parent link="slider"/><child link="ball"/><origin xyz="0 0 0.05"/></joint>
  <joint name="weld" type="fixed"><parent link="ball"/><child link="tool"/><origin xyz="0 0 0.02"/></joint>
  <joint name="mim" type="revolute"><parent link="base"/><child link="extra"/><origin xyz="0.1 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="shoulder" multiplier="0.5" offset="0.1"/></joint>
  <link name="extra"><inertial><mass value="0.1"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
</robot>
"""

GEN_MJCF = """<mujoco model="gen">
  <compiler angle="radian"/>
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <default><joint damping="0.1" armature="0.01"/><geom rgba="0.8 0.6 0.4 1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="torso" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="sphere" size="0.1" mass="2"/>
      <body name="thigh" pos="0 0 -0.1">
        <joint name="hip" type="hinge" axis="0 1 0" range="-1 1" limited="true" stiffness="5"/>
        <joint name="hip2" type="hinge" axis="1 0 0" pos="0 0 0.01"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.04"/>
        <body name="shin" pos="0 0 -0.3">
          <joint name="knee" type="slide" axis="0 0 1" range="-0.05 0.05"/>
          <geom type="box" size="0.03 0.03 0.1" pos="0 0 -0.1"/>
          <inertial pos="0 0 -0.1" mass="0.5" diaginertia="0.01 0.01 0.001"/>
        </body>
      </body>
      <body name="arm" pos="0.1 0 0" quat="1 0 0 0">
        <joint name="sh" type="ball" frictionloss="0.1"/>
        <geom type="cylinder" size="0.02 0.1" pos="0.1 0 0" euler="0 1.57 0"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="hip" gear="10" ctrlrange="-1 1"/><position joint="knee" kp="100"/></actuator>
</mujoco>
"""

PYBULLET_FILES = ["r2d2.urdf", "cartpole.urdf", "quadruped/minitaur.urdf", "kuka_iiwa/model.urdf", "humanoid.urdf"]
GYM_FILES = ["ant.xml", "hopper.xml", "humanoid.xml", "walker2d.xml", "half_cheetah.xml", "swimmer.xml"]

VALUES = [
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "1e-308",
    "0",
    "-0",
    "-1",
    "1e20",
    "-1e20",
    "",
    " ",
    "abc",
    "0 0 0",
    "0 0 0 0",
    "1 2",
    "1 2 3 4 5",
    "NaN NaN NaN",
    "inf 0 0",
    "0 0 1e308",
    "1e5 1e5 1e5",
    "-5",
    "true",
    "0x10",
    "1,2,3",
    "1e-12",
    "3.14159",
    "-1e-9 0 1",
    "revolute",
    "free",
    "hinge",
    "ball",
]


def seeds(kind: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of the files mutated: ours and, where installed, pybullet's / gymnasium's."""
    out = [("gen.urdf", GEN_URDF.encode())] if kind == "urdf" else [("gen.xml", GEN_MJCF.encode())]
    try:
        if kind == "urdf":
            import pybullet_data

            root, names = pybullet_data.getDataPath(), PYBULLET_FILES
        else:
            import gymnasium

            root, names = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets"), GYM_FILES
    except ImportError:
        return out
    for n in names:
        p = os.path.join(root, n)
        if os.path.isfile(p):
            with open(p, "rb") as f:
                out.append((p, f.read()))
    return out


ATTR = re.compile(rb'(\w+)=("[^"]*"|\'[^\']*\')')
ELEM = re.compile(rb"<(\w+)[^<>]*?/>|<(\w+)[^<>]*>")


@st.composite
def mutation(draw, data: bytes) -> bytes:
    """One to three edits of ``data``: an attribute's value replaced, an element deleted or
    duplicated, a tag renamed, bytes inserted, the file cut short, a body nested deeper."""
    for _ in range(draw(st.integers(1, 3))):
        how = draw(
            st.sampled_from(["value", "value", "value", "number", "drop", "dup", "tag", "bytes", "cut", "nest", "attr"])
        )
        attrs = list(ATTR.finditer(data))
        elems = list(ELEM.finditer(data))
        if how in ("value", "number") and attrs:
            m = attrs[draw(st.integers(0, len(attrs) - 1))]
            if how == "value":
                val = draw(st.sampled_from(VALUES)).encode()
            else:
                n = draw(st.integers(1, 4))
                xs = draw(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=n, max_size=n))
                val = " ".join(repr(x) for x in xs).encode()
            data = data[: m.start(2)] + b'"' + val + b'"' + data[m.end(2) :]
        elif how in ("drop", "dup") and elems:
            m = elems[draw(st.integers(0, len(elems) - 1))]
            if how == "drop":
                data = data[: m.start()] + data[m.end() :]
            else:
                data = data[: m.end()] + m.group(0) + data[m.end() :]
        elif how == "tag" and elems:
            m = elems[draw(st.integers(0, len(elems) - 1))]
            g = 1 if m.group(1) else 2
            new = draw(st.sampled_from([b"link", b"joint", b"body", b"geom", b"inertial", b"origin", b"joint2", b"x"]))
            data = data[: m.start(g)] + new + data[m.end(g) :]
        elif how == "bytes":
            pos = draw(st.integers(0, len(data)))
            data = data[:pos] + draw(st.binary(min_size=1, max_size=8)) + data[pos:]
        elif how == "cut":
            data = data[: draw(st.integers(0, len(data)))]
        elif how == "nest":
            depth = draw(st.sampled_from(DEPTHS))
            if b"<body" in data:
                body = b'<body pos="0 0 0.1"><joint type="hinge" axis="0 1 0"/><geom size="0.05"/>'
                chain = body * depth + b"</body>" * depth
                data = data.replace(b"</worldbody>", chain + b"</worldbody>", 1)
            elif b"</robot>" in data:
                links = b"".join(
                    b'<link name="n%d"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/>'
                    b"</inertial></link>" % i
                    for i in range(depth)
                )
                joints = b"".join(
                    b'<joint name="nj%d" type="revolute"><parent link="%s"/><child link="n%d"/>'
                    b'<axis xyz="0 0 1"/></joint>' % (i, b"n%d" % (i - 1) if i else b"base", i)
                    for i in range(depth)
                )
                data = data.replace(b"</robot>", links + joints + b"</robot>", 1)
        elif how == "attr" and elems:
            m = elems[draw(st.integers(0, len(elems) - 1))]
            g = 1 if m.group(1) else 2
            name = draw(
                st.sampled_from(
                    [
                        b"xyz",
                        b"rpy",
                        b"pos",
                        b"quat",
                        b"axis",
                        b"mass",
                        b"size",
                        b"type",
                        b"armature",
                        b"damping",
                        b"range",
                        b"fromto",
                        b"euler",
                        b"diaginertia",
                    ]
                )
            )
            val = draw(st.sampled_from(VALUES)).encode()
            data = data[: m.end(g)] + b" " + name + b'="' + val + b'"' + data[m.end(g) :]
    return data


def check_outcome(path: str) -> str:
    """ "loaded" or "refused"; fails the test on anything else."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            m = pbsim.load(path, missing_meshes="warn") if path.endswith(".urdf") else pbsim.load(path)
        except PbsimError:
            return "refused"
        try:
            q = m.default_configuration()
        except PbsimError:
            return "refused"
        z = np.zeros(m.nv)
        qdd = pbsim.aba(m, q, z, z)
        M = pbsim.crba(m, q)
        tau = pbsim.rnea(m, q, z, z)
        e = pbsim.energy(m, q, z)
    assert np.all(np.isfinite(qdd)), f"{path}: ABA not finite at the default configuration"
    assert np.all(np.isfinite(M)) and np.all(np.isfinite(tau)) and np.all(np.isfinite(e)), path
    return "loaded"


def fuzz(kind, tmp_path, data):
    _, text = data.draw(st.sampled_from(seeds(kind)), label="seed")
    mutated = data.draw(mutation(text), label="mutated")
    path = os.path.join(str(tmp_path), "fuzz" + (".urdf" if kind == "urdf" else ".xml"))
    with open(path, "wb") as f:
        f.write(mutated)
    COUNTS[check_outcome(path)] += 1


COUNTS = {"loaded": 0, "refused": 0}
_TMP = {}


def _tmp(factory):
    if "d" not in _TMP:
        _TMP["d"] = factory.mktemp("fuzz")
    return _TMP["d"]


@FUZZ
@given(data=st.data())
def test_fuzz_urdf(tmp_path_factory, data):
    fuzz("urdf", _tmp(tmp_path_factory), data)


@FUZZ
@given(data=st.data())
def test_fuzz_mjcf(tmp_path_factory, data):
    fuzz("xml", _tmp(tmp_path_factory), data)


def test_fuzz_counts_report():
    """Prints how many inputs loaded / were refused in this session's fuzz tests (-s to see)."""
    print(f"fuzz: {COUNTS['loaded']} loaded, {COUNTS['refused']} refused (PbsimError), 0 other outcomes")


@pytest.mark.parametrize("kind", ["urdf", "xml"])
def test_seeds_load(tmp_path, kind):
    """The unmutated seeds load with finite dynamics (the fuzzer starts from good files)."""
    for i, (_, text) in enumerate(seeds(kind)):
        path = str(tmp_path / f"seed{i}.{'urdf' if kind == 'urdf' else 'xml'}")
        with open(path, "wb") as f:
            f.write(text)
        assert check_outcome(path) == "loaded", (i, kind)
