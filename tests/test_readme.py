"""The README cannot drift from the code: its integrator table names every registered integrator,
and nothing that is not registered."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _integrator_table_names() -> set[str]:
    text = README.read_text()
    section = text.split("## Integrators", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([a-z0-9_]+)`", first_cell))
    return names


def test_every_registered_integrator_is_in_the_readme_table():
    from pbsim.integrators import available

    names = _integrator_table_names()
    assert names, "no integrator table under '## Integrators' in README.md"
    missing = sorted(set(available()) - names)
    unknown = sorted(names - set(available()))
    assert not missing, f"registered but not in README.md's integrator table: {missing}"
    assert not unknown, f"in README.md's integrator table but not registered: {unknown}"
