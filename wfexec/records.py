"""Plain data classes for the start-up path: what `dataclasses` gives the classes a `wfexec run` builds at start,
at a fraction of its cost.

`wfexec run` and `resume` start once per question a Claude skill asks, so their start-up is kept near the bare
interpreter's (issue 27). The standard `dataclasses` imports `inspect` (and with it `ast`, `dis`, `tokenize`),
and makes each class by compiling several methods from source; with the 28 classes a run's start defines that was
about a third of its CPU. `dataclass` here takes the same declarations (annotations, defaults, `field(...)`, the
options below) and makes the class with one small compiled `__init__` and shared methods.

Supported: `frozen`, `eq`, `slots`, `repr`, `unsafe_hash`; `field(default=..., default_factory=..., repr=...,
compare=..., hash=..., init=...)`; `__post_init__`; inheritance from another such class; `ClassVar` annotations
are not fields. `fields`, `replace`, `asdict` and `is_record` work on these classes (and only on them). The hash
and equality rules are the standard module's: eq and frozen give a hash of the compared fields; eq alone makes the
class unhashable unless it defines `__hash__`.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:  # how type checkers learn that `dataclass` makes data classes (PEP 681), on every Python
    from typing import Any, Callable, TypeVar, overload

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
else:  # both only speak to type checkers, and importing typing would cost every start of wfexec ~5 ms of CPU
    def overload(function):
        return function

    def dataclass_transform(**_options):
        return lambda decorated: decorated

_FIELDS = "__record_fields__"
_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """A field of a frozen record was assigned or deleted."""


class Field:
    __slots__ = ("name", "default", "default_factory", "init", "repr", "compare", "hash")

    def __init__(self, default: Any, default_factory: Any, init: bool, repr: bool, compare: bool,
                 hash: bool | None):
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare
        self.hash = compare if hash is None else hash

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] = _MISSING, init: bool = True,
          repr: bool = True, compare: bool = True, hash: bool | None = None) -> Any:
    return Field(default, default_factory, init, repr, compare, hash)


@overload
def dataclass(cls: type[T], /) -> type[T]: ...


@overload
def dataclass(*, frozen: bool = False, eq: bool = True, slots: bool = False, repr: bool = True,
              unsafe_hash: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(field, Field))
def dataclass(cls: Any = None, /, *, frozen: bool = False, eq: bool = True, slots: bool = False, repr: bool = True,
              unsafe_hash: bool = False) -> Any:
    def make(cls: type) -> type:
        return _make(cls, frozen, eq, slots, repr, unsafe_hash)

    return make if cls is None else make(cls)


def _make(cls: type, frozen: bool, eq: bool, slots: bool, with_repr: bool, unsafe_hash: bool) -> type:
    own = cls.__dict__
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for inherited in getattr(base, _FIELDS, {}).values() if _FIELDS in base.__dict__ else ():
            found[inherited.name] = inherited
    for name, annotation in own.get("__annotations__", {}).items():
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        if text.startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = own.get(name, _MISSING)
        spec = value if isinstance(value, Field) else Field(value, _MISSING, True, True, True, None)
        spec.name = name
        found[name] = spec
    specs = tuple(found.values())
    namespace = dict(own) if slots else None
    for spec in specs:  # a default stays a class attribute (as in `dataclasses`), a Field or a factory does not
        if isinstance(own.get(spec.name), Field):
            if spec.default is _MISSING:
                _remove(cls, namespace, spec.name)
            else:
                _put(cls, namespace, spec.name, spec.default)
    methods: dict[str, Any] = {"__init__": _init(cls, specs, frozen, hasattr(cls, "__post_init__")),
                               "__match_args__": tuple(s.name for s in specs if s.init), _FIELDS: found}
    if with_repr and "__repr__" not in own:
        methods["__repr__"] = _repr_of(tuple(s.name for s in specs if s.repr))
    compared = tuple(s.name for s in specs if s.compare)
    if eq and "__eq__" not in own:
        methods["__eq__"] = _eq_of(compared)
    if unsafe_hash or (eq and frozen):
        if "__hash__" not in own or own["__hash__"] is None:
            methods["__hash__"] = _hash_of(tuple(s.name for s in specs if s.hash))
    elif eq and "__hash__" not in own:
        methods["__hash__"] = None
    if frozen:
        methods["__setattr__"] = _frozen_setattr
        methods["__delattr__"] = _frozen_delattr
    if namespace is not None:
        for spec in specs:
            namespace.pop(spec.name, None)
        namespace.pop("__dict__", None)
        namespace.pop("__weakref__", None)
        inherited = _inherited_slots(cls)
        namespace["__slots__"] = tuple(s.name for s in specs if s.name not in inherited)
        namespace.update(methods)
        if frozen:  # as `dataclasses` does, a class's own pickling stays
            namespace.setdefault("__getstate__", record_state)
            namespace.setdefault("__setstate__", set_record_state)
        made = type(cls)(cls.__name__, cls.__bases__, namespace)
        made.__qualname__ = cls.__qualname__
        return made
    for name, value in methods.items():
        setattr(cls, name, value)
    return cls


def _inherited_slots(cls: type) -> set[str]:
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        names.update(base.__dict__.get("__slots__", ()))
    return names


def _remove(cls: type, namespace: dict | None, name: str) -> None:
    if namespace is not None:
        namespace.pop(name, None)
    else:
        delattr(cls, name)


def _put(cls: type, namespace: dict | None, name: str, value: Any) -> None:
    if namespace is not None:
        namespace[name] = value
    else:
        setattr(cls, name, value)


def _init(cls: type, specs: tuple[Field, ...], frozen: bool, post_init: bool) -> Callable:
    """`__init__`: interpreted for the class's first instances, compiled when it is made more often (and for a
    call the interpreted one does not bind). A command's start defines many more record classes than it makes
    instances of, and compiling is most of what defining one costs."""
    qualname = f"{cls.__qualname__}.__init__"
    defaulted = False
    for spec in specs:
        if spec.init and (spec.default is not _MISSING or spec.default_factory is not _MISSING):
            defaulted = True
        elif spec.init and defaulted:  # refused at declaration, as `dataclasses` does
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")

    compiled: list[Callable] = []
    interpreted = _interpreted_init(specs, frozen, post_init)
    calls = [0]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if not compiled:
            calls[0] += 1
            if calls[0] <= _INTERPRETED_CALLS and interpreted(self, args, kwargs):
                return
            compiled.append(_compiled_init(qualname, specs, frozen, post_init, type(self)))
            for owner in type(self).__mro__:  # the class this one was set on (a plain subclass inherits it)
                if owner.__dict__.get("__init__") is __init__:
                    owner.__init__ = compiled[0]  # type: ignore[misc]
                    break
        compiled[0](self, *args, **kwargs)

    __init__.__qualname__ = qualname
    return __init__


# A class's first instances are made by `_interpreted_init`, and only a class made more often than this gets its
# compiled `__init__`: compiling one costs ~0.2 ms of CPU, and a command's start makes one or two instances of
# most of the record classes it uses (a states run's start compiled 18, ~4 ms: issue 27).
_INTERPRETED_CALLS = 8


def _interpreted_init(specs: tuple[Field, ...], frozen: bool, post_init: bool) -> Callable[[Any, tuple, dict], bool]:
    """What the compiled `__init__` does, without compiling: for a call whose arguments bind (each init field
    given once, by position or by name, or declared with a default), it sets the fields in their order, as the
    compiled one would, and returns True. Any other call returns False before doing anything, and the compiled
    `__init__` then raises the usual TypeError."""
    taken = tuple(spec.name for spec in specs if spec.init)
    position = {name: index for index, name in enumerate(taken)}
    accepted = frozenset(taken)
    required = tuple(spec.name for spec in specs
                     if spec.init and spec.default is _MISSING and spec.default_factory is _MISSING)
    set_field = object.__setattr__ if frozen else setattr

    def interpreted(self: Any, args: tuple, kwargs: dict) -> bool:
        given = len(args)
        if given > len(taken) or not accepted.issuperset(kwargs):
            return False
        if any(position[name] < given for name in kwargs):
            return False  # given twice
        if any(position[name] >= given and name not in kwargs for name in required):
            return False  # missing
        for spec in specs:
            name = spec.name
            if spec.init:
                if position[name] < given:
                    value = args[position[name]]
                elif name in kwargs:
                    value = kwargs[name]
                elif spec.default is not _MISSING:
                    value = spec.default
                else:
                    value = spec.default_factory()
            elif spec.default_factory is not _MISSING:
                value = spec.default_factory()
            elif spec.default is not _MISSING:
                value = spec.default
            else:
                continue
            set_field(self, name, value)
        if post_init:
            self.__post_init__()
        return True

    return interpreted


def _slot_setters(kind: type) -> tuple | None:
    """`field_setters(kind)` when every field of `kind` is a slot (None: some live in a `__dict__`)."""
    from types import MemberDescriptorType  # once per record class made often; `re` has imported it by then

    if all(type(getattr(kind, name, None)) is MemberDescriptorType for name in getattr(kind, _FIELDS)):
        return field_setters(kind)
    return None


def _compiled_init(qualname: str, specs: tuple[Field, ...], frozen: bool, post_init: bool,
                   kind: type | None = None) -> Callable:
    """The one compiled method: `__init__` with the fields as parameters, defaults and factories as declared. A
    frozen record with slots sets each through its slot's own setter, past the class's `__setattr__`:
    `object.__setattr__` looks the name up in the class first, a third more for each field."""
    values: dict[str, Any] = {"_set": object.__setattr__, "_missing": _MISSING}
    setters = _slot_setters(kind) if frozen and kind is not None else None  # in `specs` order: both are the fields'
    parameters, body = [], []
    for index, spec in enumerate(specs):
        name = spec.name
        if spec.init:
            if spec.default is not _MISSING:
                values[f"_d{index}"] = spec.default
                parameters.append(f"{name}=_d{index}")
            elif spec.default_factory is not _MISSING:
                values[f"_f{index}"] = spec.default_factory
                parameters.append(f"{name}=_missing")
                body.append(f" if {name} is _missing: {name} = _f{index}()")
            else:
                parameters.append(name)
            value = name
        elif spec.default_factory is not _MISSING:
            values[f"_f{index}"] = spec.default_factory
            value = f"_f{index}()"
        elif spec.default is not _MISSING:
            values[f"_d{index}"] = spec.default
            value = f"_d{index}"
        else:
            continue
        if setters is not None:
            values[f"_s{index}"] = setters[index]
            body.append(f" _s{index}(self, {value})")
        else:
            body.append(f" _set(self, {name!r}, {value})" if frozen else f" self.{name} = {value}")
    if post_init:
        body.append(" self.__post_init__()")
    source = f"def __init__(self, {', '.join(parameters)}):\n" + ("\n".join(body) or " pass") + "\n"
    exec(source, values)  # noqa: S102 - our own source, from the class's field names
    function = values["__init__"]
    function.__qualname__ = qualname
    return function


def _repr_of(names: tuple[str, ...]) -> Callable:
    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"
    return __repr__


def _eq_of(names: tuple[str, ...]) -> Callable:
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
    return __eq__


def _hash_of(names: tuple[str, ...]) -> Callable:
    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in names))
    return __hash__


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


_READERS: dict[type, Callable[[Any], tuple]] = {}
_SETTERS: dict[type, tuple] = {}


def record_state(record: Any) -> tuple:
    """The values of a record's fields, in order: a frozen record's pickled state (`__getstate__`). Keeping a
    compiled workflow pickles a few records per node; one attrgetter per class (in C) reads them all, at a third
    of the cost of a `getattr` per field."""
    kind = type(record)
    read = _READERS.get(kind)
    if read is None:
        names = tuple(getattr(kind, _FIELDS))
        # attrgetter of one name gives its value, not a tuple; of none, an error
        read = _READERS[kind] = attrgetter(*names) if len(names) > 1 else \
            (lambda value: tuple(getattr(value, name) for name in names))
    return read(record)


def set_record_state(record: Any, state: tuple) -> None:
    """Set a record's fields from `record_state`'s tuple (`__setstate__`), past a frozen class's `__setattr__`."""
    kind = type(record)
    setters = _SETTERS.get(kind)
    if setters is None:
        setters = _SETTERS[kind] = field_setters(kind)
    for set_field, value in zip(setters, state):
        set_field(record, value)


def field_setters(kind: type) -> tuple[Callable[[Any, Any], None], ...]:
    """A setter `(instance, value)` for each field of a record class with slots, in order: each slot's own, which a
    frozen class's `__setattr__` does not stand in front of (`object.__setattr__`, which looks the name up in the
    class first, costs half as much again). Every field of such a class is a slot of it or of a base."""
    return tuple(getattr(kind, name).__set__ for name in getattr(kind, _FIELDS))


def is_record(value: Any) -> bool:
    return hasattr(type(value) if not isinstance(value, type) else value, _FIELDS)


def fields(value: Any) -> tuple[Field, ...]:
    return tuple(getattr(value, _FIELDS).values())


def replace(value: T, /, **changes: Any) -> T:
    """A copy of a record with some fields changed (through `__init__`, so `__post_init__` runs again)."""
    for spec in fields(value):
        if spec.init and spec.name not in changes:
            changes[spec.name] = getattr(value, spec.name)
    return value.__class__(**changes)


def asdict(value: Any) -> dict[str, Any]:
    """The record's fields as a dict, records and containers in it converted too (copies, as `dataclasses`)."""
    return {spec.name: as_plain(getattr(value, spec.name)) for spec in fields(value)}


def as_plain(value: Any) -> Any:
    """`value` with every record in it (in lists, tuples and dicts too) made a dict, as `asdict` makes one."""
    if is_record(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(as_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((as_plain(k), as_plain(v)) for k, v in value.items())
    import copy

    return copy.deepcopy(value)
