"""Which section of the top menu the current page belongs to, so the menu can mark it."""

from __future__ import annotations

# (URL namespace, start of the URL name) -> menu section; the first match wins, "" matches any name.
SECTIONS: list[tuple[str, str, str]] = [
    ("dashboard", "overview", "overview"),
    ("dashboard", "home", "overview"),
    ("dashboard", "team", "teams"),
    ("dashboard", "category", "causes"),
    ("dashboard", "job", "jobs"),
    ("dashboard", "settings", "settings"),
    ("triage", "job", "jobs"),
    ("triage", "", "rules"),
    ("fleet", "ingest-upload", "upload"),
    ("fleet", "ingest", "ingest"),
    ("fleet", "token", "ingest"),  # machine tokens are reached from the ingest runs
    ("fleet", "audit", "audit"),
    ("labeling", "", "studies"),
    ("digests", "", "digests"),
    ("connectors", "", "connectors"),
]


# What the menu calls each section; a phone's folded menu says it beside "Menu" (templates/base.html).
LABELS = {
    "overview": "Overview",
    "teams": "Teams",
    "causes": "Causes",
    "jobs": "Jobs",
    "ingest": "Ingest runs",
    "upload": "Upload",
    "audit": "Audit log",
    "studies": "Studies",
    "digests": "Digests",
    "connectors": "Connectors",
    "rules": "Rules",
    "settings": "Settings",
}


def section_of(namespace: str, url_name: str) -> str:
    for space, prefix, section in SECTIONS:
        if namespace == space and url_name.startswith(prefix):
            return section
    return ""


def nav_section(request):
    match = getattr(request, "resolver_match", None)
    if match is None:
        return {"nav_section": "", "nav_label": ""}
    section = section_of(match.namespace, match.url_name or "")
    return {"nav_section": section, "nav_label": LABELS.get(section, "")}
