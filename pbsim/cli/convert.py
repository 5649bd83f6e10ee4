"""``pbsim convert``: robot files URDF <-> MJCF, meshes converted, hulled or simplified on the way."""

from __future__ import annotations

import os

from pbsim.args import load_model
from pbsim.errors import PbsimError


def cmd_convert(args):
    from pbsim.io.convert import convert

    src = args.input
    if not os.path.exists(src) and not src.endswith((".urdf", ".xml", ".mjcf")):  # a generated name
        if args.floating_base is not None:
            raise PbsimError(f"{src}: --floating-base/--fixed-base apply to robot files, not to generated models")
        src = load_model(src)
    rep = convert(
        src,
        args.output,
        mesh_format=args.mesh_format,
        convex_hull=args.convex_hull,
        simplify=args.simplify,
        floating_base=args.floating_base,
        capsules="cylinder+spheres" if args.ros_capsules else "capsule",
    )
    print(rep)


def add_convert(sub):
    """The ``convert`` subcommand."""
    pc = sub.add_parser("convert", help="convert robot files: URDF <-> MJCF")
    pc.add_argument("input")
    pc.add_argument("output")
    pc.add_argument(
        "--mesh-format",
        choices=["stl", "obj"],
        default=None,
        help="convert meshes to this format (default: copy what the target reads, else STL)",
    )
    pc.add_argument("--convex-hull", action="store_true", help="replace collision meshes by their convex hulls")
    pc.add_argument("--simplify", type=int, metavar="FACES", help="decimate meshes to about FACES faces")
    g = pc.add_mutually_exclusive_group()
    g.add_argument("--floating-base", dest="floating_base", action="store_const", const=True, default=None)
    g.add_argument("--fixed-base", dest="floating_base", action="store_const", const=False)
    pc.add_argument(
        "--ros-capsules",
        action="store_true",
        help="write capsules as cylinder + 2 spheres (standard URDF) instead of pybullet <capsule>",
    )
    pc.set_defaults(fn=cmd_convert)
