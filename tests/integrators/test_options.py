"""Every integrator declares its options (pbsim.integrators.describe_options) and make() checks
them: unknown / misspelt names and values of the wrong kind are InputErrors naming the option."""

import pytest

import pbsim_models
from pbsim.errors import InputError
from pbsim.integrators import Option, available, describe_options, make, validate_options

NAMES = available()


@pytest.fixture(scope="module")
def model():
    return pbsim_models.chain(2)


def test_every_integrator_is_listed():
    assert {
        "euler",
        "rk4",
        "pbad",
        "pbad3",
        "pbad4",
        "variational",
        "variational_newton",
        "variational_broyden",
    } <= set(NAMES)
    for n in NAMES:
        spec = describe_options(n)
        assert all(isinstance(o, Option) and o.name == k and o.doc for k, o in spec.items())


@pytest.mark.parametrize("name", NAMES)
def test_unknown_option_rejected(name, model):
    with pytest.raises(InputError) as e:
        make(name, model, bogus=1)
    msg = str(e.value)
    assert "'bogus'" in msg and name in msg
    assert "valid options" in msg
    for opt in describe_options(name):
        assert opt in msg  # the valid names are listed


@pytest.mark.parametrize(
    "name, wrong, right",
    [
        ("pbad", "max_iteration", "max_iterations"),
        ("pbad3", "fallbak", "fallback"),
        ("pbad4", "energyguard", "energy_guard"),
        ("variational", "maxiter", "max_iter"),
        ("variational_newton", "on_fial", "on_fail"),
    ],
)
def test_misspelt_option_suggests(name, wrong, right, model):
    with pytest.raises(InputError, match=f"did you mean '{right}'"):
        make(name, model, **{wrong: 1})


@pytest.mark.parametrize(
    "name, opts",
    [
        ("pbad", dict(optimizer="newton")),
        ("pbad", dict(max_iterations="50")),
        ("pbad", dict(gtol="1e-8")),
        ("pbad", dict(hessian=True)),
        ("pbad", dict(points=[1, 2])),
        ("pbad3", dict(init="guess")),
        ("pbad3", dict(fallback="rk4")),
        ("pbad3", dict(optimizer="lbfgs")),
        ("pbad4", dict(max_rotation="big")),
        ("variational", dict(method="secant")),
        ("variational", dict(ig=4)),
        ("variational", dict(max_iter=2.5)),
        ("variational_broyden", dict(on_fail="crash")),
        ("variational", dict(tol=None)),
    ],
)
def test_bad_value_rejected(name, opts, model):
    (key,) = opts
    with pytest.raises(InputError, match=f"'{key}'"):
        make(name, model, **opts)


def test_validate_without_constructing():
    validate_options("pbad", {"gtol": 1e-6, "max_iterations": 10})
    validate_options("rk4", {})
    with pytest.raises(InputError, match="takes no options"):
        validate_options("rk4", {"tableau": "rk2"})
    with pytest.raises(InputError, match="unknown integrator"):
        describe_options("no-such-method")


@pytest.mark.parametrize("name", NAMES)
def test_declared_defaults_construct(name, model):
    """Passing every declared default explicitly builds the same integrator as passing none."""
    spec = describe_options(name)
    make(name, model)
    for k, o in spec.items():
        make(name, model, **{k: o.default})
    full = make(name, model, **{k: o.default for k, o in spec.items()})
    bare = make(name, model)
    for attr in (
        "optimizer",
        "maxit",
        "gtol",
        "xtol",
        "hessian",
        "substeps_on_failure",
        "init",
        "fallback",
        "max_rotation",
        "energy_guard",
        "method",
        "ig",
        "tol",
        "max_iter",
        "on_fail",
    ):
        assert getattr(full, attr, None) == getattr(bare, attr, None), attr


def test_presets_are_the_declared_defaults():
    assert describe_options("variational")["method"].default == "riqn"
    assert describe_options("variational_newton")["method"].default == "newton"
    assert describe_options("variational_broyden")["method"].default == "broyden"
    assert describe_options("pbad3")["max_iterations"].default == 200
    assert describe_options("pbad")["optimizer"].default == "lm"


def test_old_option_forms_still_work(model):
    p = make("pbad", model, optimizer="lbfgs")
    assert p.maxit == 500
    assert make("pbad", model).maxit == 50
    p3 = make("pbad3", model, substep=2)
    assert p3.fallback == "substep" and p3.substeps_on_failure == 2
    p3 = make("pbad3", model)
    assert p3.fallback == "pbad2" and p3.maxit == 200 and p3.xtol == 1e-10
    assert make("variational", model, ig=1, tol=1e-10, max_iter=5).max_iter == 5


def test_cli_lists_options(capsys):
    from pbsim.cli import main

    main(["integrators"])
    out = capsys.readouterr().out
    assert "max_iterations=None" in out and "on_fail='warn'" in out and "(no options)" in out


def test_cpu_batch_checks_options(model):
    from pbsim.backends.cpu import CpuBatch

    with pytest.raises(InputError, match="'bogus'"):
        CpuBatch(model, "rk4", batch=2, bogus=1)
    with pytest.raises(InputError, match="did you mean 'gtol'"):
        CpuBatch(model, "pbad", batch=2, gtl=1e-6)
