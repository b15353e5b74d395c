"""`user_prompt`: ask a person, route on the answer.

Options are written out (`prompt.options`, a list) or built from a list in state
(`options_from_state` + `option_mapping`, or `option_template` as the
hiivmind gateway writes it, or — blueprint-lib v8 — `options` written as a
mapping; `id` defaults to the item's `id`, else its `name`, else its
position). Inside the mapping each item is `item`, its position `index`, and
the item is also named by the singular of the list's name
(`available_corpora` → `corpus`: see `singular`). The values of a v8 `options`
mapping are JavaScript expressions (`candidate.name`, `'#' + index`), and an
item that is a mapping also lends them its own fields as names (`rule.name`
reads the item's `rule`). Free text goes to the `other`
handler; a dynamic option to `selected` (unless a handler has its id). The
answer is stored at `user_responses.<node>` as `{id, raw: {label|text}}`,
plus `text` for free text and `selected` (the list item) for dynamic options;
an option built by a v8 `options` mapping also copies the item's own fields
beside them (`user_responses.<node>.action`), never over `id`, `raw`, `selected`.
"""

from __future__ import annotations

import re
from wfexec.records import dataclass

from wfexec.language.diagnostics import did_you_mean
from wfexec.language.expressions import Expression, ExpressionError, Template
from wfexec.types.registry import ActionFailed
from wfexec.language.paths import get_path
from wfexec.nodes.base import CONSEQUENCES, TARGET, Choice, NodeType, Outcome, Question
from wfexec.nodes.context import NodeContext
from wfexec.nodes.parts import Checks, Docs, Drawing, Skill
from wfexec.system.patterns import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TYPE = "user_prompt"

_OPTION = {
    "type": "object",
    "properties": {
        "id": {"type": ["string", "integer", "boolean"], "description": "the answer's id (what --answer gives)"},
        "label": {"type": "string", "description": "what the person sees"},
        "description": {"type": "string", "description": "a line under the label"},
    },
    "required": ["id", "label"],
    "additionalProperties": False,
}
_MAPPING = {
    "type": "object",
    "properties": {"id": {"type": "string", "description": "a template for each option's id (`${item...}`)"},
                   "label": {"type": "string", "description": "a template for each option's label"},
                   "description": {"type": "string", "description": "a template for each option's description"}},
    "required": ["label"],
    "additionalProperties": False,
}
_V8_MAPPING = {
    "type": "object",
    "properties": {"id": {"type": "string", "description": "an expression for each option's id, e.g. rule.name"},
                   "label": {"type": "string", "description": "an expression for each option's label"},
                   "description": {"type": "string",
                                   "description": "an expression for each option's description"}},
    "required": ["label"],
    "additionalProperties": False,
    "description": "v8: one option per item of options_from_state, each field a JavaScript expression over the "
                   "item (`item`, `index`, the singular of the list's name, and the item's own fields)",
}
SCHEMA = {
    "properties": {
        "prompt": {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "what is asked (templates rendered)"},
                "header": {"type": "string", "description": "a short title above the question"},
                "options": {"anyOf": [{"type": "array", "items": _OPTION, "description": "the answers to choose from"},
                                      _V8_MAPPING],
                            "description": "the answers to choose from (a list), or, with options_from_state, a "
                                           "mapping of expressions that makes one option of each item (v8)"},
                "options_from_state": {"type": "string",
                                       "description": "a state path to a list: one option per item"},
                "option_mapping": {**_MAPPING, "description": "how an item of options_from_state becomes an option"},
                "option_template": {**_MAPPING, "description": "the same as option_mapping (v3 name)"},
                # blueprint-lib v3 leaves `prompt` open, and its files use these:
                "mode": {"type": "string", "description": "v3: `text_input` asks for free text (no options); the "
                                                          "answer goes to `other`, else to the one handler"},
                "placeholder": {"type": "string", "description": "v3: a hint shown with a free-text question"},
                "allow_other": {"type": "boolean", "description": "v3: free text is accepted besides the options "
                                                                 "(it goes to `other`)"},
                "other_label": {"type": "string", "description": "v3: the label of the free-text entry"},
                "multiSelect": {"type": "boolean", "description": "v3: accepted; wfexec asks for one option, and "
                                                                 "`response.values` lists it"},
            },
            "required": ["question"],
            "additionalProperties": False,
            "patternProperties": {"^x-": {}},
        },
        "on_response": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "properties": {"consequence": {**CONSEQUENCES, "description": "actions run for this answer"},
                               "consequences": {**CONSEQUENCES, "description": "actions run for this answer"},
                               "next_node": TARGET},
                "required": ["next_node"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["prompt", "on_response"],
}

OTHER = "other"
SELECTED = "selected"


@dataclass(frozen=True, slots=True)
class Option:
    id: str
    label: Any          # str | Template
    description: Any


@dataclass(frozen=True, slots=True)
class Handler:
    consequences: tuple
    next_node: Any


@dataclass(frozen=True, slots=True)
class UserPrompt:
    question: Any
    header: Any
    options: tuple                 # of Option (static)
    options_from: Any              # Template | tuple path | None
    mapping: dict | None           # id/label/description → Template or item path
    handlers: dict                 # id → Handler
    item_name: str | None = None   # the singular of the list's name, bound to each item beside `item`
    item_fields: bool = False      # v8 `options` mapping: the item's own fields are names too, and go in the answer
    free_text: bool = False        # free text is an answer (an `other` handler, v3 `allow_other` or `text_input`)
    text_handler: str = OTHER      # where free text goes: `other`, else a v3 text question's one handler


def compile(node_id, raw, c):
    prompt = raw.get("prompt") or {}
    options = []
    written = prompt.get("options")
    for i, option in enumerate(written if isinstance(written, list) else []):
        if isinstance(option, dict):
            options.append(Option(id=str(option.get("id")).lower() if isinstance(option.get("id"), bool)
                                  else str(option.get("id")),
                                  label=c.value(option.get("label", ""), ("prompt", "options", i, "label")),
                                  description=c.value(option.get("description", ""),
                                                      ("prompt", "options", i, "description"))))
    source = prompt.get("options_from_state")
    options_from = None
    item_name = None
    if source is not None:
        item_name = singular(source)
        options_from = c.value(source, ("prompt", "options_from_state"))
        if isinstance(options_from, str):
            options_from = c.path(options_from, ("prompt", "options_from_state"))
    mapping_raw = prompt.get("option_mapping") or prompt.get("option_template")
    mapping = None
    item_fields = isinstance(written, dict)
    if isinstance(written, dict):
        mapping = _v8_mapping(written, source, mapping_raw, c)
    elif mapping_raw:
        key = "option_mapping" if "option_mapping" in prompt else "option_template"
        mapping = {}
        for field, value in mapping_raw.items():
            compiled = c.value(value, ("prompt", key, field))
            mapping[field] = compiled if isinstance(compiled, Template) else c.path(value, ("prompt", key, field))
    handlers = {}
    for handler_id, handler in (raw.get("on_response") or {}).items():
        if not isinstance(handler, dict):
            continue
        listed = handler.get("consequences", handler.get("consequence", []))
        field = "consequences" if "consequences" in handler else "consequence"
        handlers[str(handler_id)] = Handler(
            consequences=c.calls(listed, ("on_response", handler_id, field), "consequence"),
            next_node=c.target(handler.get("next_node"), ("on_response", handler_id, "next_node")),
        )
    text_only = prompt.get("mode") == "text_input" or (not options and source is None)
    text_handler = OTHER if OTHER in handlers or not (text_only and len(handlers) == 1) else next(iter(handlers))
    return UserPrompt(question=c.value(prompt.get("question", ""), ("prompt", "question")),
                      header=c.value(prompt.get("header", ""), ("prompt", "header")),
                      options=tuple(options), options_from=options_from, mapping=mapping, handlers=handlers,
                      item_name=item_name, item_fields=item_fields,
                      free_text=text_handler in handlers or prompt.get("allow_other") is True or text_only,
                      text_handler=text_handler)


def _v8_mapping(written: dict, source, other_mapping, c) -> dict:
    """blueprint-lib v8's `options` mapping: each field an expression per item (a `${...}` is a template)."""
    at = ("prompt", "options")
    if source is None:
        c.error(at, "prompt-options-mapping", "`options` written as a mapping builds one option per item of a list, "
                "but this prompt has no `options_from_state`",
                "add `options_from_state: <state path to the list>`, or write `options` as a list of "
                "{id, label, description}", at_key=True)
    if other_mapping:
        c.error(at, "prompt-options-mapping", "`options` (a mapping) and `option_mapping`/`option_template` both say "
                "how an item becomes an option", "keep one of them", at_key=True)
    mapping: dict = {}
    for field, value in written.items():
        if not isinstance(value, str):
            continue  # the schema reports it
        compiled = c.value(value, at + (field,)) if "${" in value else c.expression(value, at + (field,))
        if compiled is not None:
            mapping[field] = compiled
    return mapping


def _bound_names(spec) -> tuple:
    return _item_names(spec) + ("response",)


def _item_names(spec) -> tuple:
    """The names a v8 `options` mapping's expressions read: any of them may be a field of the item."""
    if not spec.item_fields or not spec.mapping:
        return (spec.item_name,) if spec.item_name else ()
    names = {name for how in spec.mapping.values() if isinstance(how, Expression) for name in how.reads}
    names |= {e_name for how in spec.mapping.values() if isinstance(how, Template)
              for e in how.expressions for e_name in e.reads}
    return tuple(sorted(names | ({spec.item_name} if spec.item_name else set())))


_LAST_NAME = lazy(r"([A-Za-z_][A-Za-z0-9_]*)\W*$")
_IRREGULAR = {"people": "person", "children": "child", "indices": "index", "data": "datum"}


def singular(list_path: str) -> str | None:
    """The name each item of a list takes in an option template: the singular of the list's last name.

    `computed.available_corpora` → `corpus`, `sources` → `source`, `entries` → `entry`, `matches` → `match`.
    The rule is fixed (not a dictionary that may change): a few irregular words, then `-ora` → `-us`,
    `-ies` → `-y`, `-ches`/`-shes`/`-sses`/`-xes`/`-zes` → drop `es`, `-s` (not `-ss`, `-us`) → drop `s`. A name it
    cannot make singular (or one that is already singular) binds nothing: `item` always works.
    """
    match = _LAST_NAME.search(list_path or "")
    if not match:
        return None
    word = match.group(1).rsplit("_", 1)[-1]
    lowered = word.lower()
    if lowered in _IRREGULAR:
        return _IRREGULAR[lowered]
    for plural, single in (("ora", "us"), ("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss"),
                           ("xes", "x"), ("zes", "z")):
        if lowered.endswith(plural) and len(lowered) > len(plural):
            return word[: -len(plural)] + single
    if lowered.endswith("s") and not lowered.endswith(("ss", "us")) and len(lowered) > 1:
        return word[:-1]
    return None


def targets(spec):
    return [(handler_id, handler.next_node) for handler_id, handler in spec.handlers.items()]


def calls(spec):
    return [call for handler in spec.handlers.values() for call in handler.consequences]


def build_question(node, ctx: NodeContext) -> Question:
    spec = node.spec
    scope = ctx.scope
    render = ctx.render
    choices = [Choice(o.id, str(render(o.label)), str(render(o.description) or "")) for o in spec.options]
    dynamic = spec.options_from is not None
    if dynamic:
        what = f"the options of node '{node.id}'"
        if isinstance(spec.options_from, Template):
            items = render(spec.options_from)
            ctx.deciding(what, value=items)
        else:
            ctx.deciding(what, path=spec.options_from)
            items = get_path(ctx.state, spec.options_from)
        if isinstance(items, dict):
            items = [{"key": k, "value": v} for k, v in items.items()]
        elif items is not None and not isinstance(items, list):
            ctx.fail(f"options_from_state gave {type(items).__name__} {items!r:.60}, not a list to choose from",
                     "point `options_from_state` at a list (or a mapping) in state")
        for index, item in enumerate(items or []):
            try:
                choices.append(_dynamic_choice(spec, item, index, scope, render))
            except ExpressionError as exc:
                names = ", ".join(f"`{n}`" for n in ("item", spec.item_name, "index") if n)
                ctx.fail(f"option {index + 1} of the list: {exc.message}",
                         f"each item is named {names} in the option template", node.where)
    return Question(node=node.id, text=str(render(spec.question)), header=str(render(spec.header) or ""),
                    choices=tuple(choices), allow_other=spec.free_text, dynamic=dynamic)


def _dynamic_choice(spec, item, index, scope, render) -> Choice:
    mapping = spec.mapping
    names = {"item": item, "index": index}
    if spec.item_name and spec.item_name not in names:
        names[spec.item_name] = item
    if spec.item_fields and isinstance(item, dict):
        names = {**{str(k): v for k, v in item.items()}, **names}  # `item`, `index` and the singular win

    def field(name, default):
        if not mapping or name not in mapping:
            return default
        how = mapping[name]
        if isinstance(how, Template):
            return render(how, scope.child(**names))
        if isinstance(how, Expression):
            value = render(how, scope.child(**names))
            return default if value is None else value
        return get_path(item, how, default)

    if isinstance(item, dict):
        ident = field("id", item.get("id", item.get("name", index)))
        label = field("label", item.get("label", item.get("name", ident)))
    else:
        ident = field("id", item)
        label = field("label", item)
    return Choice(str(ident), str(label), str(field("description", "") or ""), item)


def execute(node, ctx: NodeContext) -> Outcome:
    spec = node.spec
    question = build_question(node, ctx)
    answer = ctx.ask(question)          # may park the run
    response: dict[str, Any]
    if answer.choice is not None:
        choice = answer.choice
        response = {"id": choice.id, "raw": {"label": choice.label}}
        if question.dynamic and choice.item is not None:
            if spec.item_fields and isinstance(choice.item, dict):
                response = {**{str(k): v for k, v in choice.item.items()}, **response}
            response["selected"] = choice.item
        handler_id = choice.id if choice.id in spec.handlers else (SELECTED if question.dynamic else choice.id)
        value = choice.item if question.dynamic and choice.item is not None else choice.id
        answered = {"id": choice.id, "label": choice.label, "value": value, "values": [value], "text": None}
    else:
        response = {"id": OTHER, "raw": {"text": answer.text}, "text": answer.text}
        handler_id = spec.text_handler
        answered = {"id": OTHER, "label": None, "value": answer.text, "values": [answer.text], "text": answer.text}
    ctx.set(("user_responses", node.id), response)
    handler = spec.handlers.get(handler_id)
    if handler is None:
        ctx.fail(f"the answer '{response['id']}' has no handler in on_response",
                 f"add `on_response: {{{handler_id}: {{next_node: ...}}}}`", node.where)
    # blueprint-lib v3 handlers read the answer as `response` (`${response.value}`, `${response.text}`).
    scope = ctx.scope.child(response=answered) if handler.consequences else None
    for call in handler.consequences:
        try:
            ctx.apply(call, scope)
        except ActionFailed as failure:
            # A handler has no on_failure to route to: the run stops here, saying why.
            ctx.fail(f"the answer's {call.type} failed: {failure.message}", failure.hint, call.where)
    return Outcome(handler.next_node, {"response": response["id"]}, handler_id)



# -- checks beyond the schema ---------------------------------------------------------------

HEADER_LIMIT = 12
OPTION_RANGE = (2, 4)


def check(node, raw: dict, report) -> None:
    """Every option has a handler, every handler an option; menus and headers Claude can show."""
    spec = node.spec
    path = ("nodes", node.id)
    option_ids = [o.id for o in spec.options]
    handlers = spec.handlers
    if spec.options_from is None and not spec.item_fields:  # (a v8 mapping with no list: reported at compile)
        for index, option_id in enumerate(option_ids):
            if option_id not in handlers:
                report.error(path + ("prompt", "options", index, "id"), "prompt-unhandled",
                             f"option '{option_id}' of '{node.id}' has no handler in on_response",
                             f"add `{option_id}: {{next_node: ...}}` under on_response")
        seen = set()
        for index, option_id in enumerate(option_ids):
            if option_id in seen:
                report.error(path + ("prompt", "options", index, "id"), "prompt-duplicate-option",
                             f"option id '{option_id}' appears twice in '{node.id}'", "give each option its own id")
            seen.add(option_id)
        count = len(option_ids)
        free_text_question = count == 0 and spec.free_text  # v3 `mode: text_input`
        if not OPTION_RANGE[0] <= count <= OPTION_RANGE[1] and not (count == 1 and OTHER in handlers) and \
                not free_text_question:
            hint = "split a long menu into two questions" if count > OPTION_RANGE[1] else \
                "add options, or an `other` handler so a single option can be answered with free text"
            report.warning(path + ("prompt", "options"), "prompt-option-count",
                           f"'{node.id}' offers {count} option(s); a question shows 2 to 4 well", hint)
    for handler_id in handlers:
        allowed = handler_id in option_ids or handler_id == OTHER or (
            handler_id == SELECTED and spec.options_from is not None) or spec.options_from is not None or \
            handler_id == spec.text_handler
        if not allowed:
            hint = did_you_mean(handler_id, option_ids + [OTHER]) or \
                f"handler keys are option ids ({', '.join(dict.fromkeys(option_ids))}), `other` or, for options " \
                "from state, `selected`"
            report.error(path + ("on_response", handler_id), "prompt-stray-handler",
                         f"on_response of '{node.id}' handles '{handler_id}', which is not an option", hint,
                         at_key=True)
    header = raw.get("prompt", {}).get("header")
    if isinstance(header, str) and "${" not in header and len(header) > HEADER_LIMIT:
        report.warning(path + ("prompt", "header"), "prompt-header-long",
                       f"header '{header}' is {len(header)} characters; Claude shows at most {HEADER_LIMIT}",
                       "shorten it")


def questions(node, raw: dict) -> dict:
    """What the node asks, for the table of answers in SKILL.md (as written: nothing rendered)."""
    def one_line(text) -> str:
        return " ".join(str(text or "").split())

    prompt = raw.get("prompt") or {}
    spec = node.spec
    return {
        "node": node.id,
        "question": one_line(prompt.get("question", "")),
        "options": [(option.id, one_line(written.get("label", "") if isinstance(written, dict) else ""))
                    for option, written in zip(spec.options, prompt.get("options") or [])],
        "from_state": prompt.get("options_from_state"),
        "free_text": OTHER in spec.handlers,
    }


NODE_TYPE = NodeType(
    name=TYPE, schema=SCHEMA, compile=compile, execute=execute, targets=targets, calls=calls, asks_person=True,
    checks=Checks(check=check, bound_names=_bound_names),
    skill=Skill(tools=frozenset({"AskUserQuestion"}), questions=questions),
    drawing=Drawing(shape_name="parallelogram", mermaid_shape=("[/", "/]"), dot_shape="shape=parallelogram"),
    docs=Docs(doc=__doc__, order=30, field_notes={
        "prompt": "`question`, `header` (12 characters at most), and `options` "
                  "(`id`, `label`, `description`) or `options_from_state` + `option_mapping` "
                  "(or `option_template`, or v8's `options` written as a mapping of expressions, which also see "
                  "the item's own fields): `id` defaults to the item's `id`, else its `name`, else its "
                  "position; in the templates each item is `item`, its position `index`, and the item "
                  "also takes the singular of the list's name (`available_corpora` → `corpus`, "
                  "`sources` → `source`, `entries` → `entry`: -ora→-us, -ies→-y, -ches/-shes/-sses/-xes"
                  "/-zes drop -es, else a final -s (not -ss, -us) is dropped)",
        "on_response": "answer id → `{consequence: [...], next_node}`; `other` takes free text, "
                       "`selected` an option built from state",
    }, rules="""\
1. Build the question: render `prompt.question` and `prompt.header`. The options are `prompt.options`
   (`id`, `label`, `description`, rendered); or, with `options_from_state`, one option per item of that list
   (a mapping gives one `{key, value}` item per entry), its `id`, `label` and `description` taken as
   `option_mapping` says (a path into the item, or a `${...}` over `item` and `index`; by default the item's
   `id`, its `label` or `name`, else the item itself). When `options` itself is a mapping (blueprint-lib v8),
   each of its fields is a JavaScript expression evaluated per item, with `item`, `index`, the singular of the
   list's name and, for an item that is a mapping, each of the item's fields as names.
2. Ask it (AskUserQuestion: `header`, `question`, one choice per option, single select). An answer may be an
   option's id or label. Any other text is free text, accepted only when `on_response` has an `other` handler.
3. Store the answer at `user_responses.<node id>`: `{id, raw: {label}}` for an option (plus `selected: <the
   item>` for an option built from state, and, when `options` is a v8 mapping, the item's own fields beside
   them, never replacing `id`, `raw` or `selected`); `{id: other, raw: {text}, text}` for free text.
4. Pick the handler: `on_response.<option id>`; for an option built from state with no handler of its own,
   `on_response.selected`; for free text, `on_response.other`. No handler: run error.
5. Run the handler's `consequence` (or `consequences`) in order, then go to its `next_node`. A handler has no
   `on_failure`: a consequence failing there stops the run.
"""),
)
