"""A third-party package adding types to wfexec through entry points."""

from wfexec.types import ActionFailed, TypeList

TYPES = TypeList()


@TYPES.consequence("greet", {"name": {"type": "string"}, "times": {"type": "integer", "minimum": 1},
                             "store_as": {"type": "string"}}, ["name", "store_as"], paths=("store_as",))
def greet(params, ctx):
    """Store a greeting for `name`, repeated `times` times."""
    if params["name"] == "nobody":
        raise ActionFailed("nobody cannot be greeted", "pass a real name")
    ctx.set(params["store_as"], " ".join([f"hello {params['name']}"] * params.get("times", 1)))


@TYPES.precondition("is_even", {"value": {"type": "integer"}}, ["value"])
def is_even(params, ctx):
    """True when `value` is even."""
    return params["value"] % 2 == 0
