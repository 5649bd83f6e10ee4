"""MJCF contact filtering (pbsim.io.mjcf_contact): ``Model.contact_pairs`` is MuJoCo's candidate
geom pairs.  The oracle is MuJoCo itself: with every margin raised by 100 m (gaps 0) every
candidate pair is within its margin, so ``mj_forward`` reports a contact for each of them and for
nothing else; the set of geom pairs in ``data.contact`` must equal ours, margins and friction
included."""

from __future__ import annotations

import numpy as np
import pytest

import pbsim
from pbsim.cli import main
from pbsim.errors import ParseError
from pbsim.io.mjcf_contact import candidate_pairs
from tests.conftest import gymnasium_xml, mjx_test_data

mujoco = pytest.importorskip("mujoco")

BIG = 100.0

TWO_BOXES = """
<mujoco model="two_boxes">
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="box1" pos="0 0 0.1"><freejoint/><geom name="b1" type="box" size="0.1 0.1 0.1" margin="0.01"/></body>
    <body name="box2" pos="0.5 0 0.1"><freejoint/><geom name="b2" type="box" size="0.1 0.1 0.1" margin="0.02"
        friction="0.3" priority="1"/></body>
  </worldbody>
</mujoco>"""

# a fixed base welded to the world, three hinged links (the second with a joint-less child body,
# the third with two hinges), every geom overlapping its neighbours
ARM = """
<mujoco model="arm">
  {option}
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="base" pos="0 0 0.1">
      <geom name="base_g" type="cylinder" size="0.1 0.05"/>
      <body name="link1" pos="0 0 0.1"><joint name="j1" axis="0 0 1"/>
        <geom name="l1" type="capsule" fromto="0 0 0 0 0 0.3" size="0.05"/>
        <body name="link2" pos="0 0 0.3"><joint name="j2" axis="0 1 0"/>
          <geom name="l2" type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>
          <body name="link2b" pos="0.3 0 0"><geom name="l2b" type="sphere" size="0.06"/>
            <body name="link3" pos="0 0 0"><joint name="j3a" axis="0 1 0"/><joint name="j3b" axis="1 0 0"/>
              <geom name="l3" type="box" size="0.15 0.03 0.03" pos="0.1 0 0"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""

EXCLUDE = """
<mujoco model="exclude">
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="a" pos="0 0 0.5"><freejoint/><geom name="ga" type="sphere" size="0.1"/></body>
    <body name="b" pos="0.1 0 0.5"><freejoint/><geom name="gb" type="sphere" size="0.1"/>
      <geom name="gb2" type="capsule" size="0.05 0.1"/></body>
    <body name="c" pos="0.2 0 0.5"><freejoint/><geom name="gc" type="box" size="0.1 0.1 0.1"/></body>
  </worldbody>
  <contact><exclude name="no_ab" body1="a" body2="b"/><exclude body1="world" body2="c"/></contact>
</mujoco>"""

# contype=0 geoms touching only through <pair>s; one <pair> overrides a dynamic pair (own margin
# and friction); one pairs two geoms of one rigid body (dropped with a note)
PAIRS = """
<mujoco model="pairs">
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" contype="0" conaffinity="0"/>
    <body name="a" pos="0 0 0.5"><freejoint/>
      <geom name="foot" type="sphere" size="0.1" contype="0" conaffinity="0"/>
      <geom name="shin" type="capsule" size="0.05 0.2" contype="0" conaffinity="0"/>
    </body>
    <body name="b" pos="0.3 0 0.5"><freejoint/>
      <geom name="hand" type="sphere" size="0.1" margin="0.01"/>
    </body>
    <body name="c" pos="0.6 0 0.5"><freejoint/>
      <geom name="ball" type="sphere" size="0.1" margin="0.02"/>
    </body>
  </worldbody>
  <contact>
    <pair name="foot_floor" geom1="foot" geom2="floor" margin="0.005" friction="0.8 0.8 0.005 0.0001 0.0001"/>
    <pair geom1="floor" geom2="shin"/>
    <pair name="hand_ball" geom1="hand" geom2="ball" margin="0.1" friction="0.2 0.2 0.005 0.0001 0.0001"/>
    <pair name="self" geom1="foot" geom2="shin"/>
  </contact>
</mujoco>"""

# contype/conaffinity combinations (free spheres, one per combination, and a floor 1/1)
MASKS = [(1, 1), (2, 4), (4, 2), (2, 1), (0, 1), (1, 0), (0, 0), (3, 0), (0, 6), (8, 8)]
BITMASKS = (
    "<mujoco model='masks'><worldbody><geom name='floor' type='plane' size='5 5 0.1'/>"
    + "".join(
        f"<body name='s{i}' pos='{0.1 * i} 0 0.3'><freejoint/>"
        f"<geom name='g{i}' type='sphere' size='0.1' contype='{ct}' conaffinity='{ca}'/></body>"
        for i, (ct, ca) in enumerate(MASKS)
    )
    + "</worldbody></mujoco>"
)

DISABLED = TWO_BOXES.replace("<worldbody>", "<option><flag contact='disable'/></option><worldbody>")

# a table welded to the world (no joint) with cubes on it, and a mocap body
TABLE = """
<mujoco model="table">
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="table" pos="0 0 0.5">
      <geom name="top" type="box" size="0.5 0.5 0.02"/>
      <geom name="leg" type="cylinder" size="0.03 0.25" pos="0.4 0.4 -0.25"/>
      <body name="lamp" pos="0.3 0 0.1"><geom name="lamp_g" type="sphere" size="0.05"/></body>
    </body>
    <body name="cube1" pos="0 0 0.6"><freejoint/><geom name="c1" type="box" size="0.05 0.05 0.05"/></body>
    <body name="cube2" pos="0.1 0 0.6"><freejoint/><geom name="c2" type="box" size="0.05 0.05 0.05"/>
      <geom name="egg" type="ellipsoid" size="0.03 0.03 0.05" pos="0 0 0.1"/></body>
  </worldbody>
</mujoco>"""

# mocap bodies (pbsim welds them where they are): dof-less weld bodies of their own in MuJoCo,
# so they never pair with static shapes or each other, and the parent filter separates a mocap
# body from its jointed child
MOCAP = """
<mujoco model="mocap">
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="table" pos="1 0 0"><geom name="top" type="box" size="0.1 0.1 0.1"/></body>
    <body name="hand" mocap="true" pos="0 0 0.5"><geom name="hand_g" type="box" size="0.1 0.1 0.1"/></body>
    <body name="arm" mocap="true" pos="0 0 0.7"><geom name="arm_g" type="box" size="0.1 0.1 0.1"/>
      <body name="finger" pos="0 0 0.1"><joint name="f" axis="0 1 0"/><geom name="finger_g" type="sphere" size="0.1"/>
      </body>
    </body>
    <body name="ball" pos="0.3 0 0.5"><freejoint/><geom name="ball_g" type="sphere" size="0.1"/></body>
  </worldbody>
</mujoco>"""


def write(tmp_path, text, name="m.xml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def mujoco_contacts(path) -> tuple[dict, set]:
    """``({frozenset((g1, g2)): (margin, friction)}, screened)``: the contacts MuJoCo reports at
    qpos0 with every margin raised by BIG (geom margins add up: a dynamic pair's contact has 2 BIG
    more), and the dynamic geom pairs its broad- and midphase hand to its pair filter (recorded by
    ``mjcb_contactfilter``, which applies the contype/conaffinity test as MuJoCo does without it).
    The second set is there because a collider may find no contact for a candidate pair even
    within its margin (MuJoCo's box-box test: the shadow hand's forearm and little-finger
    metacarpal boxes, 0.05 m apart, give none at any margin)."""
    mj = mujoco.MjModel.from_xml_path(path)
    explicit = {frozenset((int(a), int(b))) for a, b in zip(mj.pair_geom1, mj.pair_geom2)}
    mj.geom_margin[:] += BIG
    mj.pair_margin[:] += BIG
    mj.body_margin[:] += 2 * BIG
    mj.geom_gap[:] = 0
    mj.pair_gap[:] = 0
    override = bool(mj.opt.enableflags & mujoco.mjtEnableBit.mjENBL_OVERRIDE)
    mj.opt.o_margin += BIG  # <flag override="enable"/>: o_margin for every contact
    ct, ca = mj.geom_contype.copy(), mj.geom_conaffinity.copy()
    screened = set()

    def contact_filter(m, d, g1, g2):  # 1: reject, as MuJoCo's own bitmask filter
        if (ct[g1] & ca[g2]) | (ct[g2] & ca[g1]):
            screened.add(frozenset((int(g1), int(g2))))
            return 0
        return 1

    d = mujoco.MjData(mj)
    mujoco.set_mjcb_contactfilter(contact_filter)
    try:
        mujoco.mj_forward(mj, d)
    finally:
        mujoco.set_mjcb_contactfilter(None)
    out = {}
    for c in d.contact[: d.ncon]:
        key = frozenset((int(c.geom[0]), int(c.geom[1])))
        out[key] = (float(c.includemargin) - (BIG if key in explicit or override else 2 * BIG), float(c.friction[0]))
    assert not (set(out) - screened - explicit), "a contact of a dynamic pair the filter never saw"
    return out, screened


def ours(model) -> dict:
    """The model's contact pairs as ``{frozenset of MuJoCo geom ids: (margin, friction)}``."""
    out = {}
    for p in model.contact_pairs:
        key = frozenset((model.geoms[p.geom1].source_index, model.geoms[p.geom2].source_index))
        assert key not in out, f"pair {sorted(key)} listed twice"
        out[key] = (p.margin, p.friction)
    return out


def check_against_mujoco(path, floating_base=None):
    """Our pairs equal MuJoCo's contacts (pairs, margins, friction) less those with a geom pbsim
    does not import; ``candidate_pairs`` with MuJoCo's own weld bodies equals them exactly."""
    model = pbsim.load(path, floating_base=floating_base)
    mj = mujoco.MjModel.from_xml_path(path)
    contacts, screened = mujoco_contacts(path)
    theirs = set(contacts) | screened
    assert {frozenset(p[:2]) for p in candidate_pairs(mj)} == theirs
    imported = {g.source_index for g in model.geoms}
    got = ours(model)
    assert set(got) == {k for k in theirs if k <= imported}, (sorted(map(sorted, got)), sorted(map(sorted, theirs)))
    for k, (margin, friction) in got.items():
        if k in contacts:
            assert margin == pytest.approx(contacts[k][0], abs=1e-9) and friction == contacts[k][1], k
    in_pairs = {i for p in model.contact_pairs for i in (p.geom1, p.geom2)}
    for i, g in enumerate(model.geoms):
        assert g.role == ("collision" if i in in_pairs else "visual"), g.name
        assert g.contype == mj.geom_contype[g.source_index] and g.conaffinity == mj.geom_conaffinity[g.source_index]
        assert g.margin == mj.geom_margin[g.source_index] and g.friction == mj.geom_friction[g.source_index, 0]
    return model, mj


def names(model) -> set:
    return {frozenset((model.geoms[p.geom1].name, model.geoms[p.geom2].name)) for p in model.contact_pairs}


def P(*pairs) -> set:
    return {frozenset(p.split("-")) for p in pairs}


def test_two_free_boxes_on_a_floor(tmp_path):
    model, mj = check_against_mujoco(write(tmp_path, TWO_BOXES))
    assert names(model) == P("floor-b1", "floor-b2", "b1-b2")
    by = {frozenset((model.geoms[p.geom1].name, model.geoms[p.geom2].name)): p for p in model.contact_pairs}
    # MuJoCo adds the geoms' margins (not their max); friction: the higher priority geom's (b2, 0.3)
    assert by[frozenset(("b1", "b2"))].margin == pytest.approx(0.03)
    assert by[frozenset(("b1", "b2"))].friction == 0.3 and by[frozenset(("floor", "b1"))].friction == 1.0
    assert not any(p.explicit for p in model.contact_pairs) and model.contact_disabled is False


def test_override_and_gap(tmp_path):
    """<flag override="enable"/>: every pair gets o_margin and o_friction (MuJoCo's rule); a geom
    gap is not imported, with a note naming the pairs."""
    opt = "<option o_margin='0.05' o_friction='0.4 0.4 0.005 0.0001 0.0001'><flag override='enable'/></option>"
    model, _ = check_against_mujoco(write(tmp_path, TWO_BOXES.replace("<worldbody>", opt + "<worldbody>")))
    assert {(p.margin, p.friction) for p in model.contact_pairs} == {(0.05, 0.4)}
    model = pbsim.load(write(tmp_path, TWO_BOXES.replace('margin="0.01"', 'margin="0.01" gap="0.005"')))
    (note,) = [n for n in model.notes if "gap" in n]
    assert note.startswith("contact gap of 2 pair(s) not imported") and "'floor-b1'" in note and "'b1-b2'" in note


@pytest.mark.parametrize("filterparent", [True, False])
def test_arm_parent_filtering(tmp_path, filterparent):
    option = "" if filterparent else "<option><flag filterparent='disable'/></option>"
    model, mj = check_against_mujoco(write(tmp_path, ARM.format(option=option)))
    # the base is welded to the world: it never pairs with the floor, and the parent filter
    # exempts world-welded bodies, so it touches link1; link2b is welded to link2
    always = P(
        "floor-l1", "floor-l2", "floor-l2b", "floor-l3", "base_g-l1", "base_g-l2", "base_g-l2b", "base_g-l3", "l1-l3"
    )
    parents = P("l1-l2", "l1-l2b", "l2-l3", "l2b-l3")
    assert names(model) == (always if filterparent else always | parents)


def test_exclude(tmp_path):
    model, _ = check_against_mujoco(write(tmp_path, EXCLUDE))
    assert names(model) == P("floor-ga", "floor-gb", "floor-gb2", "ga-gc", "gb-gc", "gb2-gc")


def test_explicit_pairs(tmp_path):
    path = write(tmp_path, PAIRS)
    model = pbsim.load(path)
    theirs, _ = mujoco_contacts(path)
    mj = mujoco.MjModel.from_xml_path(path)
    gid = {mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g): g for g in range(mj.ngeom)}
    rigid = frozenset((gid["foot"], gid["shin"]))
    # MuJoCo reports the <pair> of two geoms of one body too (a force internal to the body);
    # pbsim drops exactly that one, with a note
    assert rigid in theirs and set(ours(model)) == set(theirs) - {rigid}
    assert any("'self'" in n and "never move relative" in n for n in model.notes), model.notes
    by = {frozenset((model.geoms[p.geom1].name, model.geoms[p.geom2].name)): p for p in model.contact_pairs}
    assert set(by) == P("foot-floor", "floor-shin", "hand-ball")
    assert all(p.explicit for p in by.values())
    ff, hb = by[frozenset(("foot", "floor"))], by[frozenset(("hand", "ball"))]
    assert (ff.name, ff.margin, ff.friction) == ("foot_floor", 0.005, 0.8)
    # the <pair> replaces the dynamic hand-ball pair (margin 0.03, friction 1): its own values
    assert (hb.name, hb.margin, hb.friction) == ("hand_ball", 0.1, 0.2)
    assert by[frozenset(("floor", "shin"))].name == ""
    for k, (margin, friction) in ours(model).items():
        assert margin == pytest.approx(theirs[k][0], abs=1e-9) and friction == theirs[k][1]
    roles = {g.name: g.role for g in model.geoms}
    assert set(roles) == {"floor", "foot", "shin", "hand", "ball"} and set(roles.values()) == {"collision"}


def test_bitmasks(tmp_path):
    model, _ = check_against_mujoco(write(tmp_path, BITMASKS))
    match = lambda a, b: bool((a[0] & b[1]) | (a[1] & b[0]))  # noqa: E731
    expect = {frozenset(("floor", f"g{i}")) for i, m in enumerate(MASKS) if match(m, (1, 1))}
    expect |= {
        frozenset((f"g{i}", f"g{j}"))
        for i in range(len(MASKS))
        for j in range(i + 1, len(MASKS))
        if match(MASKS[i], MASKS[j])
    }
    assert names(model) == expect
    # 2/4 - 4/2 match, 2/4 - 2/1 do not
    assert frozenset(("g1", "g2")) in expect and frozenset(("g1", "g3")) not in expect
    roles = {g.name: g.role for g in model.geoms}
    assert roles["g6"] == "visual" and roles["g9"] == "visual" and roles["g0"] == "collision"


def test_contact_disabled(tmp_path):
    model, _ = check_against_mujoco(write(tmp_path, DISABLED))
    assert model.contact_disabled is True and model.contact_pairs == []
    assert all(g.role == "visual" for g in model.geoms)
    assert any("contact is disabled" in n for n in model.notes)


def test_table_welded_to_the_world(tmp_path):
    """The table's geoms are static (body -1 in pbsim, MuJoCo's weld body 0): they pair with the
    cubes, never with the floor; the ellipsoid is imported (issue 29) and in its five pairs."""
    model, mj = check_against_mujoco(write(tmp_path, TABLE))
    assert names(model) == P(
        "floor-c1", "floor-c2", "top-c1", "top-c2", "leg-c1", "leg-c2", "lamp_g-c1", "lamp_g-c2", "c1-c2",
        "floor-egg", "top-egg", "leg-egg", "lamp_g-egg", "c1-egg",
    )  # fmt: skip
    assert {g.name for g in model.geoms if g.body < 0} == {"floor", "top", "leg", "lamp_g"}
    assert not [n for n in model.notes if "unsupported geoms" in n]


def test_mocap_bodies(tmp_path):
    model, mj = check_against_mujoco(write(tmp_path, MOCAP))
    assert names(model) == P(
        "floor-ball_g",
        "top-ball_g",
        "hand_g-ball_g",
        "arm_g-ball_g",
        "finger_g-ball_g",
        "floor-finger_g",
        "top-finger_g",
        "hand_g-finger_g",
    )
    assert {g.name for g in model.geoms if g.body < 0} == {"floor", "top", "hand_g", "arm_g"}


def test_fixed_and_floating_base_follow_pbsim(tmp_path):
    """The pairs follow what moves in pbsim: --fixed-base welds the free boxes (nothing moves, no
    pair); --floating-base frees the welded table, which then touches the floor."""
    fixed = pbsim.load(write(tmp_path, TWO_BOXES), floating_base=False)
    assert fixed.nb == 0 and fixed.contact_pairs == [] and all(g.role == "visual" for g in fixed.geoms)
    table = TABLE[: TABLE.index('<body name="cube1"')] + "</worldbody></mujoco>"
    assert pbsim.load(write(tmp_path, table)).contact_pairs == []
    freed = pbsim.load(write(tmp_path, table), floating_base=True)
    assert freed.floating_base and freed.body_names == ["table"]
    assert names(freed) == P("floor-top", "floor-leg", "floor-lamp_g")


GYM = [
    "ant.xml",
    "half_cheetah.xml",
    "hopper.xml",
    "humanoid.xml",
    "humanoidstandup.xml",
    "inverted_double_pendulum.xml",
    "inverted_pendulum.xml",
    "point.xml",
    "pusher.xml",
    "reacher.xml",
    "swimmer.xml",
    "walker2d_v5.xml",
]
MJX = [
    "humanoid/02_humanoids.xml",
    "shadow_hand/right_hand.xml",
    "shadow_hand/scene_right.xml",
    "convex.xml",
    "sensor/sensor.xml",
    "tendon/tendon.xml",
    "barkour_v0/assets/barkour_v0_mjx.xml",
]


@pytest.mark.parametrize("name", GYM)
def test_gymnasium_models(name):
    model, _ = check_against_mujoco(gymnasium_xml(name))
    if name == "humanoid.xml":
        assert len(model.contact_pairs) == 126 and not any(p.explicit for p in model.contact_pairs)
    if name == "inverted_pendulum.xml":  # contype=0 everywhere: nothing touches, nothing is collision
        assert model.contact_pairs == [] and all(g.role == "visual" for g in model.geoms)


@pytest.mark.parametrize("rel", MJX)
def test_mjx_test_models(rel):
    check_against_mujoco(mjx_test_data(rel))


def test_mjx_humanoid_feet_only():
    """MJX's humanoid: body geoms have contype=conaffinity=0, the feet touch the floor through
    four <pair>s: exactly those, and the feet (and floor) are the only collision geometry."""
    model, _ = check_against_mujoco(mjx_test_data("humanoid/humanoid.xml"))
    assert names(model) == P("foot1_left-floor", "foot1_right-floor", "foot2_left-floor", "foot2_right-floor")
    assert all(p.explicit for p in model.contact_pairs)
    assert {g.name for g in model.geoms if g.role == "collision"} == {
        "floor",
        "foot1_left",
        "foot1_right",
        "foot2_left",
        "foot2_right",
    }


@pytest.mark.parametrize(
    "contact, what",
    [("<pair geom1='b1' geom2='nope'/>", "nope"), ("<exclude body1='box1' body2='ghost'/>", "ghost")],
)
def test_unknown_names_are_refused(tmp_path, contact, what):
    p = write(tmp_path, TWO_BOXES.replace("</mujoco>", f"<contact>{contact}</contact></mujoco>"))
    with pytest.raises(ParseError, match=rf"m\.xml: MuJoCo could not compile it: .*{what}") as e:
        pbsim.load(p)
    assert ("<contact><pair>" if "pair" in contact else "<contact><exclude>") in str(e.value)


def test_info_lists_the_contact_pairs(tmp_path, capsys):
    p = write(tmp_path, TWO_BOXES)
    assert main(["info", p]) == 0
    out = capsys.readouterr().out
    assert "contact pairs: 3 (2 body-world, 1 body-body)" in out
    assert main(["info", p, "--contacts"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if " -- " in ln]
    assert len(lines) == 3
    row = next(ln for ln in lines if "b1 (box1)" in ln and "b2 (box2)" in ln)
    assert "margin 0.03" in row and "friction 0.3" in row
    assert any("floor (world)" in ln for ln in lines)
    import json

    assert main(["info", p, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["contact_pairs"]) == 3 and d["contact_disabled"] is False
    assert {"geom1", "geom2", "body1", "body2", "margin", "friction", "explicit", "name"} <= set(d["contact_pairs"][0])


def test_info_of_a_urdf_model_names_the_default_rules(capsys):
    assert main(["info", "chain3"]) == 0
    assert "contact pairs: decided by pbsim's default rules (robot-environment; self-collision off)" in (
        capsys.readouterr().out
    )


def test_contact_fields_survive_the_build_and_array_types(tmp_path):
    model = pbsim.load(write(tmp_path, ARM.format(option="")))
    assert sorted(g.source_index for g in model.geoms) == list(range(len(model.geoms)))
    for p in model.contact_pairs:
        assert isinstance(p.geom1, int) and isinstance(p.margin, float) and isinstance(p.friction, float)
    assert np.all([g.body >= -1 for g in model.geoms])


def by_names(model) -> dict:
    return {
        frozenset((model.geoms[p.geom1].name, model.geoms[p.geom2].name)): (p.margin, p.friction)
        for p in model.contact_pairs
    }


@pytest.mark.parametrize(
    "source",
    [
        "TWO_BOXES",
        "ARM",
        "ARM_NOFILTER",
        "EXCLUDE",
        "PAIRS",
        "BITMASKS",
        "DISABLED",
        "TABLE",
        "MOCAP",
        "humanoid",
        "mjx_humanoid",
        "shadow_hand",
    ],
)
def test_mjcf_export_keeps_the_contact_pairs(tmp_path, source):
    """The MJCF writer (through ``pbsim convert``) reproduces the pairs exactly (implicit where
    MuJoCo's rules on the written tree give them, else <pair>/<exclude>): read back, pbsim and
    MuJoCo agree on the same pairs."""
    from pbsim.io.convert import convert

    texts = {
        "TWO_BOXES": TWO_BOXES,
        "ARM": ARM.format(option=""),
        "EXCLUDE": EXCLUDE,
        "PAIRS": PAIRS,
        "ARM_NOFILTER": ARM.format(option="<option><flag filterparent='disable'/></option>"),
        "BITMASKS": BITMASKS,
        "DISABLED": DISABLED,
        "TABLE": TABLE,
        "MOCAP": MOCAP,
    }
    if source == "humanoid":
        path = gymnasium_xml("humanoid.xml")
    elif source == "mjx_humanoid":
        path = mjx_test_data("humanoid/humanoid.xml")
    elif source == "shadow_hand":  # meshes, <exclude>s, a world-welded forearm
        path = mjx_test_data("shadow_hand/right_hand.xml")
    else:
        path = write(tmp_path, texts[source], "src.xml")
    model = pbsim.load(path)
    out = str(tmp_path / "out.xml")
    convert(path, out)
    back, _ = check_against_mujoco(out)
    assert back.contact_disabled == model.contact_disabled
    a, b = by_names(model), by_names(back)
    assert set(a) == set(b)
    for k, (margin, friction) in a.items():
        assert b[k][0] == pytest.approx(margin, abs=1e-12) and b[k][1] == friction, k
    assert {g.name: g.role for g in back.geoms} == {g.name: g.role for g in model.geoms}
