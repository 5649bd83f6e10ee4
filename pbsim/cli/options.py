"""The integrator-option flags, generated from every method's option spec, and their check against ``--integrator``."""

from __future__ import annotations

import argparse

from pbsim.errors import PbsimError

# flags of earlier versions, kept as aliases of the generated ones
OLD_FLAGS = {
    "init": ["--pbad-init"],
    "fallback": ["--pbad-fallback"],
    "energy_guard": ["--pbad-energy-guard"],
    "method": ["--vi-method"],
    "xtol": ["--vi-tol"],
    "max_iterations": ["--vi-max-iter"],
}


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


class _OptionFlag(argparse.Action):
    """Stores the value and the flag spelling used (for messages that quote the user's flag)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        used = dict(getattr(namespace, "_flag_used", None) or {})
        used[self.dest] = option_string
        namespace._flag_used = used


def add_integrator_args(p):
    """One flag per integrator option, generated from the union of every registered method's
    option spec (``--max-iterations`` for ``max_iterations`` ...), so a new method's options get
    flags with no edit here and every method names the same thing the same way.  A flag given
    for an integrator that lacks the option is an error naming the methods that have it."""
    from pbsim.integrators import available, describe_options

    uses: dict[str, list] = {}
    for n in available():
        for o in describe_options(n).values():
            if o.cli and o.kind in ("int", "float", "str", "bool"):
                uses.setdefault(o.name, []).append((n, o))
    g = p.add_argument_group("integrator options (each method's option spec; `pbsim integrators` lists them)")
    taken = {s for a in p._actions for s in a.option_strings}  # noqa: SLF001 - argparse has no public query
    for name, us in uses.items():
        kinds = {o.kind for _, o in us}
        kind = kinds.pop() if len(kinds) == 1 else "str"
        choices = None
        if all(o.choices for _, o in us):
            choices = list(dict.fromkeys(c for _, o in us for c in o.choices))
        flag = "--" + name.replace("_", "-")
        if flag in taken:  # an option named like a rollout flag
            flag = "--integrator-" + name.replace("_", "-")
        names = [flag] + [f for f in OLD_FLAGS.get(name, []) if f not in taken]
        doc = us[0][1].doc.replace("%", "%%")
        g.add_argument(
            *names,
            action=_OptionFlag,
            dest=f"opt_{name}",
            default=None,
            choices=choices,
            type={"int": int, "float": float, "bool": _bool}.get(kind, str),
            metavar=None if choices else name.upper(),
            help=f"{doc} [{', '.join(n for n, _ in us)}]",
        )
    g.add_argument("--vi-ig", dest="opt_ig", type=int, choices=[1, 2, 3], help=argparse.SUPPRESS)  # old --init
    p.set_defaults(_option_users={k: [n for n, _ in us] for k, us in uses.items()} | {"ig": ["variational"]})


def integrator_options_from_args(args) -> dict:
    """The integrator options given on the command line, checked against ``args.integrator``."""
    from pbsim.integrators import describe_options

    have = describe_options(args.integrator, aliases=True)
    opts = {}
    for name, users in args._option_users.items():
        val = getattr(args, f"opt_{name}", None)
        if val is None:
            continue
        if name not in have:
            flag = (getattr(args, "_flag_used", None) or {}).get(f"opt_{name}") or "--" + name.replace("_", "-")
            raise PbsimError(f"{flag} applies to {'/'.join(users)} only (not to --integrator {args.integrator})")
        opts[name] = val
    return opts
