"""wfexec.records makes the start-up path's data classes as the standard `dataclasses` would: the same
constructor, defaults and factories, repr, equality and hashing, frozen fields, slots, pickling, replace and
asdict. Each case declares the same class with both and compares what they do."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
from typing import ClassVar

import pytest

from wfexec import records


def declare(module):
    @module.dataclass(frozen=True, slots=True)
    class Where:
        file: str
        line: int = 0
        notes: dict = module.field(default_factory=dict, repr=False, compare=False)
        clock: object = module.field(default=len, compare=False)
        kind: ClassVar[str] = "where"

    @module.dataclass
    class Options:
        steps: int = 10
        answers: list = module.field(default_factory=list)
        checked: bool = module.field(default=False, init=False)

        def __post_init__(self):
            self.checked = True

    @module.dataclass(slots=True)
    class Outcome:
        target: str
        outcome: dict = module.field(default_factory=dict)

    @module.dataclass(frozen=True, eq=False)
    class Kind:
        name: str

    return Where, Options, Outcome, Kind


OURS, THEIRS = declare(records), declare(dataclasses)
Where, Options, Outcome, Kind = OURS  # at module level, where pickle finds them
for _kept in OURS:
    _kept.__qualname__ = _kept.__name__


@pytest.mark.parametrize("index", range(4))
def test_the_same_declaration_makes_the_same_class(index):
    ours, theirs = OURS[index], THEIRS[index]
    assert ours.__match_args__ == theirs.__match_args__
    assert hasattr(ours, "__slots__") == hasattr(theirs, "__slots__")
    assert (ours.__hash__ is None) == (theirs.__hash__ is None)


def test_construction_defaults_repr_equality_and_hash():
    for Where, Options, Outcome, Kind in (OURS, THEIRS):
        where = Where("a.yaml", 3)
        assert repr(where).endswith("Where(file='a.yaml', line=3, clock=<built-in function len>)"), repr(where)
        assert where == Where("a.yaml", 3, clock=print) and hash(where) == hash(Where("a.yaml", 3))
        assert where != Where("a.yaml", 4) and where.notes == {} and where.notes is not Where("b").notes
        assert where == Where("a.yaml", 3, {"other": 1})  # compare=False
        assert Where.kind == "where"
        options = Options()
        assert (options.steps, options.answers, options.checked) == (10, [], True)
        assert Options(answers=[1]) == Options(10, [1]) and Options() != Options(5)
        outcome = Outcome("next")
        outcome.outcome["x"] = 1
        assert outcome == Outcome("next", {"x": 1})
        with pytest.raises(TypeError):
            hash(outcome)
        assert Kind("a") != Kind("a") and len({Kind("a"), Kind("a")}) == 2
        with pytest.raises(TypeError):
            Where()  # the field without a default is required


CALLS = [  # (class index, args, kwargs): calls that bind and calls that do not
    (0, ("a.yaml",), {}), (0, ("a.yaml", 3), {"clock": print}), (0, (), {"file": "b", "notes": {"n": 1}}),
    (0, ("a.yaml", 3, {}, len), {}), (1, (), {}), (1, (5,), {"answers": [1]}), (2, ("t",), {"outcome": {"x": 1}}),
    (3, (), {"name": "k"}),
    (0, (), {}), (0, ("a",), {"file": "b"}), (0, ("a", 1, {}, len, "extra"), {}), (0, ("a",), {"nothing": 1}),
    (1, (), {"checked": True}), (2, (), {"outcome": {}}),
]


def _made(cls, args, kwargs):
    try:
        made = cls(*args, **kwargs)
    except TypeError:
        return TypeError
    return repr(made), {name: getattr(made, name) for name in cls.__match_args__}


@pytest.mark.parametrize("index, args, kwargs", CALLS)
def test_the_first_instances_and_the_compiled_constructor_bind_as_dataclasses_does(index, args, kwargs):
    """A class's first instances are made without compiling its `__init__`, later ones with it: both bind
    arguments, fill defaults and factories, run `__post_init__` and refuse a wrong call as `dataclasses` does."""
    ours, theirs = declare(records)[index], THEIRS[index]
    expected = _made(theirs, args, kwargs)
    first = _made(ours, args, kwargs)
    assert ours.__init__.__code__.co_filename.endswith("records.py") == (expected is not TypeError)  # not compiled
    later = [_made(ours, args, kwargs) for _ in range(records._INTERPRETED_CALLS + 1)]
    assert ours.__init__.__code__.co_filename == "<string>"  # compiled now
    assert all(each == expected for each in [first, *later]), ([first, *later], expected)


def test_frozen_fields_cannot_change():
    where = OURS[0]("a.yaml")
    with pytest.raises(AttributeError):
        where.line = 4
    with pytest.raises(AttributeError):
        del where.file
    with pytest.raises(AttributeError):
        where.extra = 1  # slots: no other attribute either


def test_records_pickle_and_replace_and_asdict():
    where = Where("a.yaml", 3, {"n": [1]})
    assert pickle.loads(pickle.dumps(where)) == where
    assert pickle.loads(pickle.dumps(Outcome("t", {"a": 1}))) == Outcome("t", {"a": 1})
    assert pickle.loads(pickle.dumps(Options(3))) == Options(3)
    moved = records.replace(where, line=9)
    assert (moved.file, moved.line, moved.notes) == ("a.yaml", 9, {"n": [1]})
    assert records.asdict(Outcome("t", {"a": [1]})) == dataclasses.asdict(THEIRS[2]("t", {"a": [1]}))
    assert [f.name for f in records.fields(where)] == [f.name for f in dataclasses.fields(THEIRS[0]("a"))]
    assert records.is_record(where) and records.is_record(Where) and not records.is_record(object())


@records.dataclass(frozen=True, slots=True)
class _OneField:
    name: str


@records.dataclass(frozen=True, slots=True)
class _NoField:
    pass


@records.dataclass(frozen=True, slots=True)
class _Inherited(_OneField):
    count: int = 0
    tags: tuple = ()


@records.dataclass(frozen=True)
class _PlainBase:
    name: str


@records.dataclass(frozen=True, slots=True)
class _SlotsOverPlain(_PlainBase):
    count: int = 0


@pytest.mark.parametrize("record", [_OneField("a"), _NoField(), _Inherited("b", 2, ("x",)), _SlotsOverPlain("c", 5),
                                    Where("w", 4)])
def test_frozen_records_with_slots_pickle_back_every_field(record):
    # Their state is read by one getter per class and set again through each field's slot (a compiled workflow
    # pickles several per node): a class of one field, of none, and ones whose fields come partly from a base.
    again = pickle.loads(pickle.dumps(record))
    assert again == record and type(again) is type(record)
    assert [getattr(again, f.name) for f in records.fields(again)] == \
        [getattr(record, f.name) for f in records.fields(record)]


@pytest.mark.parametrize("cls, args", [(_Inherited, ("b", 2, ("x",))), (_SlotsOverPlain, ("c", 5))])
def test_a_frozen_record_made_often_sets_each_field_where_it_lives(cls, args):
    """Past its first instances, a frozen record with slots sets each field through its slot's own setter (one
    whose fields are not all slots, through `object.__setattr__`): every field reads back, and none can change."""
    made = [cls(*args) for _ in range(records._INTERPRETED_CALLS + 2)]
    assert cls.__init__.__code__.co_filename == "<string>"  # compiled now
    assert [[getattr(each, f.name) for f in records.fields(each)] for each in made] == [list(args)] * len(made)
    with pytest.raises(AttributeError):
        setattr(made[-1], records.fields(made[-1])[0].name, "changed")


def test_a_default_before_a_required_field_is_refused_at_declaration():
    with pytest.raises((TypeError, SyntaxError)):
        @records.dataclass
        class Wrong:
            first: int = 0
            second: str


def test_a_frozen_class_keeps_its_own_pickling():
    """`wfexec.language.model.Call` pickles without the closure it makes on its first run. (Ours only: the
    standard library's dataclasses of some 3.11 releases, 3.11.2 among them, replace a frozen slots class's own
    __getstate__.)"""
    @records.dataclass(frozen=True, slots=True)
    class Cached:
        name: str
        made: object = records.field(default=None, init=False, compare=False)

        def __getstate__(self):
            return (self.name,)

        def __setstate__(self, state):
            object.__setattr__(self, "name", state[0])
            object.__setattr__(self, "made", None)

    Cached.__qualname__ = Cached.__name__
    globals()["Cached"] = Cached  # where pickle finds it
    kept = Cached("a")
    object.__setattr__(kept, "made", lambda: None)  # no pickle takes a lambda
    again = pickle.loads(pickle.dumps(kept))
    assert (again.name, again.made) == ("a", None)


# Printed at exit (the command ends the process itself): which of the two the command imported.
REPORT_AT_EXIT = ("atexit.register(lambda: print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules), "
                  "file=sys.stderr))\n")


def test_a_run_starts_without_importing_dataclasses_or_inspect(tmp_path):
    """What the records are for: `wfexec run` of a small workflow, unchanged since it was last run (compiled, in the
    cache), imports neither."""
    probe = ("import atexit, sys; sys.argv = ['wfexec', 'run', sys.argv[1], '--ephemeral', '--answer', "
             "'ask_mood=cheerful']\n" + REPORT_AT_EXIT + "from wfexec.launcher import main\nmain()\n")
    from pathlib import Path

    quickstart = Path(__file__).resolve().parents[1] / "skills" / "quickstart"
    env = {**os.environ, "WFEXEC_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # the first run compiles the workflow and keeps it
        done = subprocess.run([sys.executable, "-c", probe, str(quickstart)], capture_output=True, text=True,
                              cwd=tmp_path, env=env)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def test_states_starts_without_importing_dataclasses_or_inspect(tmp_path):
    """`wfexec states` on a one-script folder (Raymond's protocol, run through a `states` node) imports neither:
    its classes are records too, and the API's signatures are built only when asked for."""
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "START.sh").write_text("echo '<result>ok</result>'\n")
    probe = ("import atexit, sys; sys.argv = ['wfexec', 'states', sys.argv[1]]\n" + REPORT_AT_EXIT +
             "from wfexec.launcher import main\nmain()\n")
    env = {**os.environ, "WFEXEC_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # the first run compiles the workflow the folder runs in and keeps it
        done = subprocess.run([sys.executable, "-c", probe, str(flow)], capture_output=True, text=True,
                              cwd=tmp_path, env=env)
    assert done.stdout.strip() == "ok", done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
