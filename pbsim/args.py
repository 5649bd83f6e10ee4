"""The model and motion arguments every command shares (``pbsim info``, ``rollout``, ``view`` ...)
and argument parsing with close-match suggestions: below both the CLI (:mod:`pbsim.cli`) and the
viewer (``pbsim_viewer``), so that neither imports the other's module for them."""

from __future__ import annotations

import argparse
import difflib
import os

from pbsim.errors import PbsimError


def model_from_args(args):
    """The model the arguments of :func:`add_model_args` name (every command loads it so)."""
    return load_model(args.model, args.floating_base, args.fix_inertia, args.package, args.allow_missing_meshes)


def load_model(spec: str, floating_base=None, fix_inertia=False, packages=(), allow_missing_meshes=False):
    """A robot file path, or the name of one of our generated models (chain10, snake36, ...)."""
    import pbsim

    if not os.path.exists(spec) and not spec.endswith((".urdf", ".xml", ".mjcf")):
        try:
            import pbsim_models
        except ImportError:  # pragma: no cover - installed with pbsim
            pbsim_models = None
        if pbsim_models is not None:
            try:
                return pbsim_models.by_name(spec)
            except KeyError as e:
                raise PbsimError(f"{spec!r} is neither a file nor a generated model: {e.args[0]}") from None
    kw = {"fix_inertia": fix_inertia}
    if packages:
        kw["package_map"] = dict(p.split("=", 1) for p in packages)
    if allow_missing_meshes:
        kw["missing_meshes"] = "warn"
    if spec.endswith((".xml", ".mjcf")):
        kw.pop("package_map", None)
        if kw.pop("missing_meshes", None):
            raise PbsimError(f"{spec}: --allow-missing-meshes applies to URDF (MuJoCo compiles an MJCF's meshes)")
    return pbsim.load(spec, floating_base=floating_base, **kw)


def add_model_args(p):
    """The model arguments every command takes (rollout, info, view): MODEL, base, inertia, packages.
    Returns the base options' mutually exclusive group."""
    p.add_argument("model", help="robot file (.urdf, .xml) or generated model name (chain10, snake36, spider, ...)")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--floating-base",
        dest="floating_base",
        action="store_const",
        const=True,
        default=None,
        help="give the root link a free joint",
    )
    g.add_argument(
        "--fixed-base", dest="floating_base", action="store_const", const=False, help="weld the root link to the world"
    )
    p.add_argument("--fix-inertia", action="store_true", help="project non-physical inertias instead of failing")
    p.add_argument(
        "--allow-missing-meshes",
        action="store_true",
        help="skip collision meshes that cannot be found (a note each) instead of failing; missing visual meshes "
        "are always skipped with a note",
    )
    p.add_argument(
        "--package",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="resolve package://NAME/ mesh paths under PATH (repeatable)",
    )
    return g


class MotionAction(argparse.Action):
    """``--motion NAME``; ``--motion list`` prints the motions of :mod:`pbsim.control.motions` and exits."""

    def __call__(self, parser, namespace, values, option_string=None):
        if values == "list":
            from pbsim.control.motions import motion_names, motion_summary

            for n in motion_names():
                print(f"{n:<18} {motion_summary(n)}")
            parser.exit()
        setattr(namespace, self.dest, values)


def add_motion_arg(p):
    """``--motion NAME`` (rollout and the viewer): any public motion of pbsim.control.motions, found
    by :func:`pbsim.control.motions.motion_names`, tracked with SPD."""
    p.add_argument(
        "--motion",
        metavar="NAME",
        action=MotionAction,
        help="track a reference motion of pbsim.control.motions with SPD (default gains kp = 30 M, kd = M, M the "
        "total mass; --kp/--kd override) from its first pose; 'list' prints the names (e.g. robosimian_jump, "
        "robosimian_walk, humanoid_gait, dog_trot, snake_slither, sinusoid)",
    )


def motion_from_args(model, args):
    """The :class:`~pbsim.control.targets.Reference` of ``--motion`` (an unknown name is an InputError
    listing the valid ones); ``--kp``/``--kd`` given (not "0") replace the default gains."""
    from pbsim.control.motions import make_motion

    gains = {}
    for k in ("kp", "kd"):
        val = getattr(args, k, None)
        if val not in (None, "0"):
            try:
                gains[k] = float(val)
            except (TypeError, ValueError):
                raise PbsimError(f"--{k} with --motion takes one number, got {val!r}") from None
    kw = {k: getattr(args, k) for k in ("root", "root_kp", "root_kd", "clamp") if getattr(args, k, None) is not None}
    if getattr(args, "spd_solver", None):
        kw["solver"] = args.spd_solver
    return make_motion(model, args.motion, dt=args.dt, **gains, **kw)


def parse_args(parser: argparse.ArgumentParser, argv) -> argparse.Namespace:
    """``parser.parse_args(argv)``, but an unknown option is refused with the closest valid
    names of its command ("did you mean --integrator?") and the list of valid options."""
    args, extras = parser.parse_known_args(argv)
    if not extras:
        return args
    target = parser
    for a in parser._actions:  # the sub-command's own parser, when there is one
        if isinstance(a, argparse._SubParsersAction) and getattr(args, "cmd", None) in a.choices:
            target = a.choices[args.cmd]
    valid = sorted({s for a in target._actions for s in a.option_strings if s.startswith("--")})
    words = []
    for tok in extras:
        close = difflib.get_close_matches(tok.split("=", 1)[0], valid, n=3, cutoff=0.6) if tok.startswith("-") else []
        words.append(tok + (f" (did you mean {' or '.join(close)}?)" if close else ""))
    target.error(f"unrecognized arguments: {' '.join(words)}; valid options: {', '.join(valid)}")
