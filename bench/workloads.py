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
