"""Command line: ``pbsim info | rollout | view | convert | optimize | sweep | ...``.

A file per command (:mod:`~pbsim.cli.info` with ``integrators``, :mod:`~pbsim.cli.rollout`,
:mod:`~pbsim.cli.convert`, :mod:`~pbsim.cli.warmup`, :mod:`~pbsim.cli.optimize`,
:mod:`~pbsim.cli.sweep`), each with its ``cmd_*`` function and the ``add_*`` that adds its
subcommand; :mod:`~pbsim.cli.options` generates the integrator-option flags.  Here: the parser
wiring (:func:`build_parser`), ``pbsim view`` (the viewer owns its arguments) and :func:`main`,
the console entry point."""

from __future__ import annotations

import argparse
import os
import sys

from pbsim.args import (  # noqa: F401 (re-exported: pbsim.cli.parse_args, add_model_args ... as before)
    MotionAction,
    add_model_args,
    add_motion_arg,
    load_model,
    model_from_args,
    motion_from_args,
    parse_args,
)
from pbsim.cli.convert import add_convert, cmd_convert
from pbsim.cli.info import add_info, add_integrators, cmd_info, cmd_integrators
from pbsim.cli.optimize import add_optimize, cmd_optimize
from pbsim.cli.options import OLD_FLAGS, add_integrator_args, integrator_options_from_args
from pbsim.cli.rollout import add_rollout, cmd_rollout, rest_on_environment
from pbsim.cli.sweep import add_sweep, cmd_sweep
from pbsim.cli.warmup import add_warmup, cmd_warmup
from pbsim.errors import PbsimError

__all__ = [
    "MotionAction",
    "OLD_FLAGS",
    "add_integrator_args",
    "add_model_args",
    "add_motion_arg",
    "build_parser",
    "cmd_convert",
    "cmd_info",
    "cmd_integrators",
    "cmd_optimize",
    "cmd_rollout",
    "cmd_sweep",
    "cmd_view",
    "cmd_warmup",
    "integrator_options_from_args",
    "load_model",
    "main",
    "model_from_args",
    "motion_from_args",
    "parse_args",
    "rest_on_environment",
]


def cmd_view(args):
    try:
        import pbsim_viewer
    except ImportError as e:
        raise PbsimError(f"the viewer needs its extra: pip install 'pbsim[viewer]' ({e})") from None
    code = pbsim_viewer.main(args.rest)
    if code:
        raise SystemExit(code)


def build_parser():
    p = argparse.ArgumentParser(
        prog="pbsim", description="Articulated-robot simulation with large-timestep integrators"
    )
    from pbsim import __version__

    p.add_argument("--version", action="version", version=f"pbsim {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    add_info(sub)
    add_rollout(sub)

    pv = sub.add_parser("view", help="interactive viewer (needs the [viewer] extra)", add_help=False)
    pv.add_argument("rest", nargs=argparse.REMAINDER)
    pv.set_defaults(fn=cmd_view)

    add_convert(sub)
    add_warmup(sub)
    add_optimize(sub)
    add_sweep(sub)
    add_integrators(sub)
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["view"]:  # the viewer owns its arguments (and --help)
        return _run(cmd_view, argparse.Namespace(rest=argv[1:]))
    return _run(None, parse_args(build_parser(), argv))


def _run(fn, args):
    fn = fn or args.fn
    try:
        fn(args)
        sys.stdout.flush()
    except BrokenPipeError:  # `pbsim info X --json | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except PbsimError as e:
        print(f"pbsim: error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, KeyError, ValueError) as e:
        print(f"pbsim: error: {e}", file=sys.stderr)
        return 2
    return 0
