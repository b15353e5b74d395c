"""Synthetic workflows for benchmarks: realistic node mixes at a chosen size."""

from __future__ import annotations


def large_workflow(nodes: int = 500) -> str:
    """About ten lines per node: a chain of actions, conditionals, gates and prompts."""
    lines = [
        "name: large",
        'version: "1.0.0"',
        "description: A synthetic workflow for load benchmarks.",
        "start_node: n0",
        "initial_state:",
        "  flags: {ready: true}",
        "  items: [a, b, c]",
        "nodes:",
    ]
    for i in range(nodes):
        nxt = f"n{i + 1}" if i + 1 < nodes else "done"
        kind = i % 4
        if kind == 0:
            lines += [
                f"  n{i}:",
                "    type: action",
                f"    description: step {i} sets values",
                "    actions:",
                "      - type: set_state",
                f"        field: computed.v{i}",
                f'        value: "item ${{items[0]}} at {i}"',
                f"      - {{type: compute, expression: \"len(items) + {i}\", store_as: computed.c{i}}}",
                f"    on_success: {nxt}",
                "    on_failure: failed",
            ]
        elif kind == 1:
            lines += [
                f"  n{i}:",
                "    type: conditional",
                "    condition:",
                "      type: all_of",
                "      conditions:",
                "        - {type: flag_set, flag: ready}",
                f"        - {{type: evaluate_expression, expression: \"computed.c{i - 1} > 0\"}}",
                "    branches:",
                f"      true: {nxt}",
                "      false: failed",
            ]
        elif kind == 2:
            lines += [
                f"  n{i}:",
                "    type: validation_gate",
                "    validations:",
                "      - type: state_not_null",
                f"        field: computed.v{i - 2}",
                f"        error_message: \"v{i - 2} missing\"",
                "      - {type: count_above, field: items, min: 0, error_message: \"no items\"}",
                f"    on_valid: {nxt}",
                "    on_invalid: failed",
                "    description: gate",
            ]
        else:
            lines += [
                f"  n{i}:",
                "    type: user_prompt",
                "    prompt:",
                f'      question: "Continue past {i}?"',
                "      header: Continue",
                "      options: [{id: go, label: Go, description: next}, {id: stop, label: Stop, description: end}]",
                "    on_response:",
                f"      go: {{next_node: {nxt}}}",
                "      stop: {next_node: failed}",
                "      other: {next_node: failed}",
            ]
    lines += [
        "endings:",
        "  done: {type: success, message: done}",
        "  failed: {type: error, message: failed}",
    ]
    return "\n".join(lines) + "\n"


def _chain(nodes: int) -> list[str]:
    """The shape issue 27 measured: a chain of `action` nodes with one `compute` each."""
    lines = ["name: chain", 'version: "1.0.0"', "start_node: n0", "initial_state: {items: [a, b]}", "nodes:"]
    for i in range(nodes):
        nxt = f"n{i + 1}" if i + 1 < nodes else "done"
        lines += [f"  n{i}:", "    type: action", "    actions:",
                  f'      - {{type: compute, expression: "len(items) + {i}", store_as: computed.c{i}}}',
                  f"    on_success: {nxt}", "    on_failure: failed"]
    return lines + ["endings:", "  done: {type: success, message: done}", "  failed: {type: error, message: failed}"]


def _conditionals(nodes: int) -> list[str]:
    """v8 shape: conditionals on nested `{all|any: [...]}` combinators and three-case `gated_action` composites,
    each branching forward to two nodes, ending nodes instead of an `endings:` block."""
    lines = ["name: conditionals", 'version: "1.0.0"', "start_node: n0",
             "initial_state: {level: 3, flags: {ready: true}}", "nodes:"]
    for i in range(nodes):
        near = f"n{i + 1}" if i + 1 < nodes else "done"
        far = f"n{i + 2}" if i + 2 < nodes else "done"
        if i % 2 == 0:
            lines += [f"  n{i}:", "    type: conditional", "    condition:", "      all:",
                      f'        - "level > {i % 7}"',
                      f'        - {{any: ["level < 2", {{none: ["level == {i}"]}}, {{type: flag_set, flag: ready}}]}}',
                      f"    on_true: {near}", f"    on_false: {far}", "    on_unknown: failed"]
        else:
            lines += [f"  n{i}:", "    type: gated_action", "    when:"]
            for case in range(3):
                lines += [f'      - condition: "level == {case}"',
                          f"        consequences: [{{type: set_flag, flag: f{case}}}]",
                          f"        next_node: {near if case % 2 else far}"]
            lines += [f"    else: {near}", "    on_unknown: failed"]
    return lines + ["  done: {type: ending, outcome: success, message: done}",
                    "  failed: {type: ending, outcome: error, message: failed}"]


def _references(nodes: int) -> list[str]:
    """Every node reads values earlier nodes wrote (`${...}` templates, state paths) and names several targets."""
    lines = ["name: references", 'version: "1.0.0"', "start_node: n0", "initial_state: {items: [a, b]}", "nodes:"]
    for i in range(nodes):
        nxt = f"n{i + 1}" if i + 1 < nodes else "done"
        reads = " ".join(f"${{computed.v{j}}}" for j in range(max(0, i - 4), i) if j % 3 != 2) or "${items[0]}"
        if i % 3 == 2:
            lines += [f"  n{i}:", "    type: user_prompt", "    prompt:",
                      f'      question: "Go on after {reads}?"', "      header: Next",
                      "      options: [{id: go, label: Go}, {id: back, label: Back}, {id: stop, label: Stop}]",
                      "    on_response:",
                      f"      go: {{next_node: {nxt}}}",
                      f"      back: {{next_node: n{max(0, i - 2)}}}",
                      "      stop: {next_node: failed}"]
        else:
            lines += [f"  n{i}:", "    type: action", "    actions:",
                      f'      - {{type: set_state, field: computed.v{i}, value: "{reads} at {i}"}}',
                      f"      - {{type: set_state, field: computed.copy{i}, value: \"${{computed.v{i}}}\"}}",
                      f"    on_success: {nxt}", "    on_failure: failed"]
    return lines + ["endings:", "  done: {type: success, message: done}", "  failed: {type: error, message: failed}"]


def _long_expressions(nodes: int) -> list[str]:
    """`compute` programs of about 200 characters: sums over earlier results, ternaries, array methods."""
    lines = ["name: expressions", 'version: "1.0.0"', "start_node: n0", "initial_state: {items: [1, 2, 3]}",
             "nodes:"]
    for i in range(nodes):
        nxt = f"n{i + 1}" if i + 1 < nodes else "done"
        earlier = " + ".join(f"(computed.e{j} || 0)" for j in range(max(0, i - 3), i)) or "0"
        program = (f"{earlier} + items.map(x => x * {i % 9 + 1}).reduce((a, b) => a + b, 0)"
                   f" + (len(items) > {i % 5} ? Math.max(...items) : items.length)")
        lines += [f"  n{i}:", "    type: action", "    actions:",
                  f'      - {{type: compute, expression: "{program}", store_as: computed.e{i}}}',
                  f"    on_success: {nxt}", "    on_failure: failed"]
    return lines + ["endings:", "  done: {type: success, message: done}", "  failed: {type: error, message: failed}"]


VALIDATION_SHAPES = {"chain": _chain, "conditionals": _conditionals, "references": _references,
                     "long_expressions": _long_expressions}


def validation_workflow(shape: str, nodes: int) -> str:
    """A valid workflow of `nodes` nodes in one of VALIDATION_SHAPES."""
    return "\n".join(VALIDATION_SHAPES[shape](nodes)) + "\n"
