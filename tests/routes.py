"""Every URL pattern of the project, for the tests that must cover them all.

`tests/test_access_matrix.py` checks that each URL name has a row in docs/access-control.md;
`tests/test_web_security.py` checks that each view is CSRF-protected or on its allow-list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver


@dataclass(frozen=True)
class Route:
    name: str | None  # namespaced ("fleet:job-list"); None for the few unnamed patterns (the admin's)
    route: str  # the pattern as written, its includes' prefixes joined in front
    callback: Callable  # the view the resolver calls (a class-based view's as_view() result)
    params: tuple[str, ...]  # the URL parameters it captures, prefixes' included

    @property
    def label(self) -> str:
        return self.name or self.route


def routes() -> list[Route]:
    """Every URLPattern reachable from ROOT_URLCONF, walking includes recursively."""
    found: list[Route] = []

    def walk(resolver: URLResolver, prefix: str, namespace: str, params: tuple[str, ...]) -> None:
        for pattern in resolver.url_patterns:
            captured = params + tuple(pattern.pattern.regex.groupindex)
            if isinstance(pattern, URLResolver):
                inner = namespace
                if pattern.namespace:
                    inner = f"{namespace}:{pattern.namespace}" if namespace else pattern.namespace
                walk(pattern, prefix + str(pattern.pattern), inner, captured)
            elif isinstance(pattern, URLPattern):
                name = (f"{namespace}:{pattern.name}" if namespace else pattern.name) if pattern.name else None
                found.append(Route(name, prefix + str(pattern.pattern), pattern.callback, captured))

    walk(get_resolver(), "", "", ())
    return found
