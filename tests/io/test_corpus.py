"""Every URDF shipped by pybullet_data and every MJCF in gymnasium's MuJoCo assets (and
pybullet_data/mjcf) is loaded, with ABA and CRBA finite at 3 random states, or refused with a
PbsimError naming the file and a reason; no other exception.  Every file the reference parser
loads (Pinocchio's buildModelFromUrdf, MuJoCo's MjModel.from_xml_path) is loaded by pbsim, with the
same mass matrix, except the reasons listed in scripts/checks/corpus.py RETRY (docs/robots.md), and those
load with the option named there.  ``python scripts/checks/corpus.py`` prints the counts table."""

from __future__ import annotations

import pytest

from scripts.checks import corpus as C


@pytest.fixture(scope="module")
def records():
    recs = C.corpus(collections=("pybullet_data", "gymnasium"))  # MJX's and shared robots: the script's table
    if not recs:
        pytest.skip("neither pybullet_data nor gymnasium is installed")
    recs = C.run(recs)
    print("\n" + C.table(recs))
    return recs


def _show(recs):
    return "\n".join(f"{r.rel}: {r.status} {r.reason} {r.message[:200]}" for r in recs[:20])


def test_collections_found(records):
    kinds = {(r.collection, r.kind) for r in records}
    pytest.importorskip("pybullet_data")
    assert ("pybullet_data", "urdf") in kinds
    if any(r.collection == "gymnasium" for r in records):
        assert sum(r.collection == "gymnasium" for r in records) >= 10


def test_nothing_crashes(records):
    crashed = [r for r in records if r.status == "crash"]
    assert not crashed, _show(crashed)


def test_loaded_models_have_finite_dynamics(records):
    bad = [r for r in records if r.status == "loaded" and not r.finite]
    assert not bad, _show(bad)


def test_refusals_name_the_file_and_a_reason(records):
    refused = [r for r in records if r.status == "refused"]
    unnamed = [r for r in refused if r.path not in r.message or not r.reason]
    assert not unnamed, _show(unnamed)
    # every refusal falls in one of the documented reasons (C.REASONS), none unclassified
    known = {label for _, label in C.REASONS}
    odd = [r for r in refused if r.reason not in known]
    assert not odd, _show(odd)


def test_what_the_reference_loads_pbsim_loads(records):
    checked = [r for r in records if r.reference_loads is not None]
    if not checked:
        pytest.skip("neither Pinocchio nor MuJoCo is installed")
    missed = [
        r for r in checked if r.reference_loads and r.status != "loaded" and not (r.reason in C.RETRY and r.retry_ok)
    ]
    assert not missed, _show(missed)


def test_mass_matrix_equals_the_reference(records):
    compared = [r for r in records if r.m_error is not None]
    if not compared:
        pytest.skip("neither Pinocchio nor MuJoCo is installed")
    off = [r for r in compared if not r.m_error < C.M_TOL]
    assert not off, "\n".join(f"{r.rel}: {r.m_error:.2e}" for r in off)
    assert len(compared) >= 0.9 * sum(r.status == "loaded" and r.nv > 0 for r in records)


def test_mjcf_table_names_what_is_dropped(tmp_path):
    """scripts/checks/corpus.py's MJCF table (no corpus needed): a row per file with bodies/DOF and one
    phrase per note, a refusal with its reason, and per-kind file counts."""
    f = tmp_path / "m.xml"
    f.write_text(
        '<mujoco><worldbody><body name="a"><joint name="j" type="ball" range="0 1" limited="true"/>'
        '<geom type="ellipsoid" size="0.1 0.2 0.3"/></body></worldbody>'
        '<sensor><framepos name="p" objtype="body" objname="a"/></sensor></mujoco>'
    )
    (tmp_path / "bad.xml").write_text("<mujoco><worldbody><geom type='nope'/></worldbody></mujoco>")
    recs = [
        C.check(C.Record("t", "mjcf", "m.xml", str(f)), compare=False),
        C.check(C.Record("t", "mjcf", "bad.xml", str(tmp_path / "bad.xml")), compare=False),
    ]
    text = C.mjcf_table(recs)
    row = next(line for line in text.splitlines() if line.startswith("m.xml"))
    assert (
        "1/3" in row
        and "N sensor(s) not imported" in row
        and "ball-joint cone limits are held by the explicit methods only" in row
    )
    assert "ellipsoid" not in row  # ellipsoids are simulated (issue 29)
    assert "REFUSED  MuJoCo refuses it" in text
    assert "MJCF: 2 files, 1 loaded (0 with nothing dropped), 1 refused, 0 crashed" in text
    assert "   1 file(s): N sensor(s) not imported" in text
    assert C.note_kind("joint 'j': stiffness of a ball joint is not imported") == (
        "joint X: stiffness of a ball joint is not imported"
    )
