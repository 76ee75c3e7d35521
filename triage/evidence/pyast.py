"""Small readings of a Python syntax tree that the script readers share. Pure Python; no Django."""

from __future__ import annotations

import ast


def dotted(node: ast.AST | None) -> str:
    """`torch.cuda.synchronize` for the callee of a call; a name reached through a call's result starts with "()"
    (`a(...).b` -> "().b", a call itself -> "()"); '' for anything else (a subscript, a literal, None)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):
        parts.append("()")
        return ".".join(reversed(parts))
    return ""
