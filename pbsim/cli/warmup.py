"""``pbsim warmup``: compile the common kernels once, in parallel (CPU, or the CUDA kernel cache)."""

from __future__ import annotations

from pbsim.errors import PbsimError


def cmd_warmup(args):
    from pbsim.warmup import warmup

    names = [n for n in args.integrators.split(",") if n] if args.integrators else None
    configs = [c for c in args.configs.split(",") if c] if args.configs else None
    kw = {}
    if args.device == "cuda":
        kw = {"layouts": [x for x in (args.layouts or "aos,soa").split(",") if x], "cc": args.cc or "9.0"}
    elif args.layouts or args.cc:
        raise PbsimError("--layouts and --cc apply to --device cuda only")
    res = warmup(names, configs, jobs=args.jobs, device=args.device, **kw)
    if any("error" in r for r in res.values()):
        raise PbsimError("warmup failed for " + ", ".join(n for n, r in res.items() if "error" in r))


def add_warmup(sub):
    """The ``warmup`` subcommand."""
    pw = sub.add_parser("warmup", help="compile the common kernels once (in parallel) so first runs start fast")
    pw.add_argument(
        "--integrators", default=None, help="comma-separated (default euler,rk4,pbad; --device cuda: euler,pbad)"
    )
    pw.add_argument(
        "--configs",
        default=None,
        help="single, contact (ground plane), batch (B >= 4: the multi-core build) (default: all); "
        "--device cuda: contact, free (default: both)",
    )
    pw.add_argument("--jobs", type=int, default=None, help="processes at once (default: one per core)")
    pw.add_argument(
        "--device",
        default="cpu",
        choices=["cpu", "cuda"],
        help="cuda: fill the CUDA kernel cache (~/.cache/pbsim/cuda): on this machine's GPU, else for --cc "
        "with NVVM and nvJitLink (pip install 'pbsim[gpu]')",
    )
    pw.add_argument("--layouts", default=None, help="--device cuda: GPU layouts to build (default aos,soa)")
    pw.add_argument("--cc", default=None, help="--device cuda without a GPU: compute capability (default 9.0)")
    pw.set_defaults(fn=cmd_warmup)
