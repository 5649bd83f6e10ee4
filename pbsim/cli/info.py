"""``pbsim info`` (a model's summary, tree and contact pairs) and ``pbsim integrators`` (the registered methods)."""

from __future__ import annotations

from pbsim.args import add_model_args, model_from_args


def cmd_info(args):
    model = model_from_args(args)
    if args.json:
        print(model.to_json())
    else:
        from pbsim.model.contacts import contact_pairs_text

        print(model.summary())
        print(contact_pairs_text(model, detail=args.contacts))
        if args.tree:
            print()
            print(model.tree())


def cmd_integrators(args):
    import pbsim

    for n in pbsim.integrators.available():
        print(f"{n:<16} {pbsim.integrators.describe(n)}")
        spec = pbsim.integrators.describe_options(n)
        for o in spec.values():
            print(f"    {o.name}={o.default!r}  ({o.describe_kind()}) {o.doc}")
        if not spec:
            print("    (no options)")
        if pbsim.integrators.step_spec(n) is not None:
            print("    (one step kernel: also runs batched by CpuBatch and on device='cuda')")


def add_info(sub):
    """The ``info`` subcommand."""
    pi = sub.add_parser("info", help="model summary: joint table with q/v indices, DOF, mass")
    add_model_args(pi)
    pi.add_argument("--json", action="store_true", help="machine-readable summary")
    pi.add_argument("--tree", action="store_true", help="also print the kinematic tree")
    pi.add_argument("--contacts", action="store_true", help="also list the contact pairs (which shapes may touch)")
    pi.set_defaults(fn=cmd_info)


def add_integrators(sub):
    """The ``integrators`` subcommand."""
    pl = sub.add_parser("integrators", help="list the registered integrators")
    pl.set_defaults(fn=cmd_integrators)
