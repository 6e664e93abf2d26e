"""Scopes inside a generator: what binds the schema, which branch or loop a call is in.

A declaration inside ``if (axes_input) {...}`` belongs to the schemas whose generator call
passes ``true`` there and to no other; one inside a loop cannot be pinned to one index.
These helpers answer such questions on tokens, from the literal arguments bound to the
generator's parameters, and say "unknown" rather than guess.
"""
from __future__ import annotations

from .cpp_source import CppFile, Kind, Span

LOOPS = ("for", "while", "do")
FALSE, TRUE = {"false", "nullptr", "NULL", "0"}, {"true", "1"}


def schema_param(f: CppFile, params_open: int) -> str | None:
    """The name of a parameter declared ``OpSchema& name`` in the list at ``params_open``."""
    for span in f.arguments(params_open):
        words = [f.tokens[k].text for k in range(span.first, span.last + 1)]
        if len(words) >= 3 and words[-3:-1] == ["OpSchema", "&"] and f.is_ident(span.last):
            return words[-1]
    return None


def schema_vars(f: CppFile, scope: Span) -> set[str]:
    """Names bound to an ``OpSchema&`` where the scope starts (a generator's parameter)."""
    j = scope.first - 2
    while f.is_ident(j, "const") or f.is_ident(j, "mutable") or f.is_ident(j, "noexcept"):
        j -= 1
    if f.is_punct(scope.first - 1, "{") and f.is_punct(j, ")"):
        name = schema_param(f, f.pairs[j])
        return {name} if name else set()
    return set()


def schema_lambdas(f: CppFile, scope: Span) -> list[Span]:
    """Bodies of the lambdas ``[..](OpSchema& x) {...}`` in ``scope`` (not nested ones)."""
    out, k = [], scope.first
    while k <= scope.last:
        if f.is_punct(k, "[") and f.is_punct(f.pairs[k] + 1, "("):
            params = f.pairs[k] + 1
            body = f.pairs[params] + 1
            while f.is_ident(body, "mutable"):
                body += 1
            if f.is_punct(body, "{") and schema_param(f, params):
                out.append(Span(body + 1, f.pairs[body] - 1))
                k = f.pairs[body] + 1
                continue
        k += 1
    return out


def bind(g: CppFile, params: int, f: CppFile, k: int, env: dict[str, str]) -> dict[str, str]:
    """The definition's parameters bound to the call's literal arguments (or defaults)."""
    args = f.arguments(k + 1) if f.is_punct(k + 1, "(") else []
    bound: dict[str, str] = {}
    for i, span in enumerate(g.arguments(params)):
        words = [j for j in range(span.first, span.last + 1)]
        eq = next((j for j in words if g.is_punct(j, "=")), None)
        name_k = (eq - 1) if eq is not None else span.last
        if not g.is_ident(name_k):
            continue
        if i < len(args):
            text = f.source(args[i])
            bound[g.tokens[name_k].text] = env.get(text, text)
        elif eq is not None:
            bound[g.tokens[name_k].text] = g.source(Span(eq + 1, span.last))
    return bound


def truth(f: CppFile, cond: Span, env: dict[str, str]) -> bool | None:
    """``name`` or ``!name`` with ``name`` bound to a literal; None when it is not known."""
    negate = f.is_punct(cond.first, "!")
    first = cond.first + 1 if negate else cond.first
    if first != cond.last or not f.is_ident(first):
        return None
    value = env.get(f.tokens[first].text)
    if value is None:
        return None
    literal = True if value in TRUE or value.startswith('"') else \
        False if value in FALSE else None
    return None if literal is None else literal != negate


def statement_end(f: CppFile, start: int, last: int) -> int:
    """The last token of the statement starting at ``start``: a {block} or up to ';'."""
    if f.is_punct(start, "{"):
        return f.pairs[start]
    end = start
    while end <= last and not f.is_punct(end, ";"):
        end = f.pairs[end] + 1 if f.tokens[end].kind is Kind.PUNCT and \
            f.tokens[end].text in "([{" else end + 1
    return end


def applies(f: CppFile, k: int, scope: Span, env: dict[str, str]) -> bool | None:
    """Whether the call at ``k`` runs for this binding: False under a branch not taken,
    None under a condition the reader cannot evaluate, True otherwise."""
    result: bool | None = True
    for j in range(scope.first, k):
        if not f.is_ident(j, "if") or not f.is_punct(j + 1, "("):
            continue
        cond_close = f.pairs[j + 1]
        then_end = statement_end(f, cond_close + 1, scope.last)
        if cond_close < k <= then_end:
            wanted = True
        elif f.is_ident(then_end + 1, "else") and \
                then_end + 1 < k <= statement_end(f, then_end + 2, scope.last):
            wanted = False
        else:
            continue
        known = truth(f, Span(j + 2, cond_close - 1), env)
        if known is None:
            result = None
        elif known != wanted:
            return False
    return result


def in_loop(f: CppFile, k: int, scope: Span) -> bool:
    """Whether token ``k`` is in the header or body of a loop inside ``scope``."""
    for j in range(scope.first, k):
        if not f.is_ident(j) or f.tokens[j].text not in LOOPS:
            continue
        body = j + 1
        if f.is_punct(body, "("):
            if k <= f.pairs[body]:
                return True
            body = f.pairs[body] + 1
        if k <= statement_end(f, body, scope.last):
            return True
    return False
