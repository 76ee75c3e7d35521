"""Library-dimension rules: API misuse and lengthy library installation."""

from __future__ import annotations

from triage.evidence import Evidence
from triage.rules.common import plural, start_up_downloads, startup
from triage.rules.registry import Finding, register
from triage.taxonomy import Category


@register(Category.API_MISUSE)
def api_misuse(ev: Evidence, th: dict) -> list[Finding]:
    if ev.interactive or ev.phases.training is None:
        return []
    syncs = [f for f in ev.scripts.of("host_sync") if not f.detail.get("sampled")]
    late_visible = [f for f in ev.scripts.of("cuda_visible_devices") if f.detail.get("after_framework_import")]
    hidden = [
        f
        for f in ev.scripts.of("env")
        if f.detail["name"] == "CUDA_VISIBLE_DEVICES"
        and "$" not in f.detail["value"]
        and 0 < len([d for d in f.detail["value"].split(",") if d.strip()]) < ev.job.gpu_count
    ]
    findings = []
    if syncs:
        calls = sorted({f.detail["call"] for f in syncs})
        calls = [c if "." in c else f".{c}()" for c in calls]  # summaries are plain text, not Markdown
        quoted = list({(f.path, f.line): f for f in syncs}.values())  # one quote a line
        findings.append(
            Finding(
                category=Category.API_MISUSE,
                sub_cause="sync_in_training_loop",
                confidence=0.8,
                summary=(
                    f"The training step calls {', '.join(calls)} on every step ({len(syncs)} "
                    f"call{'s' if len(syncs) != 1 else ''} on {len(quoted)} line{'s' if len(quoted) != 1 else ''}): "
                    "each makes the CPU wait for the GPU to finish, so the next step is queued late."
                ),
                windows=[ev.phases.training],
                code=quoted[:5],
                numbers={"calls_per_step": len(syncs)},
            )
        )
    if late_visible or hidden:
        findings.append(
            Finding(
                category=Category.API_MISUSE,
                sub_cause="cuda_visible_devices",
                confidence=0.75,
                summary=(
                    "CUDA_VISIBLE_DEVICES "
                    + (
                        "is set after the framework was imported, when CUDA may already be initialised"
                        if late_visible
                        else f"hides some of the {ev.job.gpu_count} allocated GPUs"
                    )
                    + "."
                ),
                windows=[ev.phases.training],
                code=(late_visible + hidden)[:3],
            )
        )
    return findings


@register(Category.LENGTHY_LIBRARY_INSTALL)
def lengthy_library_install(ev: Evidence, th: dict) -> list[Finding]:
    if ev.interactive:
        return []
    start = startup(ev)
    code = ev.scripts.of("shell_install")
    p = ev.phases
    if start.install is not None and start.install.seconds >= th["install_min_s"]:
        span = start.install
        confidence = 0.85 + 0.1 * bool(code)
        lines = [start.install_lines[0], start.install_lines[-1]]
    elif not ev.logs.has_timestamps and code and p.head is not None and p.head.seconds >= th["install_min_s"]:
        if ev.scripts.of("hub_download", "shell_download") or start_up_downloads(ev):
            return []  # the idle head may as well be downloads
        span = p.head
        confidence = 0.5
        lines = []
    else:
        return []
    return [
        Finding(
            category=Category.LENGTHY_LIBRARY_INSTALL,
            sub_cause=_installer(code, start.install_lines),
            confidence=confidence,
            summary=(
                f"Installing libraries inside the job took {span.seconds / 60:.0f} min "
                f"(>= {th['install_min_s'] / 60:.0f} min) while {plural(ev.job.gpu_count, 'GPU')} waited."
            ),
            windows=[span],
            log_lines=lines,
            code=code[:4],
            numbers={"install_minutes": round(span.seconds / 60, 1), "install_lines": len(start.install_lines)},
            time_located=True,
            gpu_hours=ev.unused(span.start, span.end),
        )
    ]


def _installer(code, lines) -> str:
    text = " ".join(f.text for f in code) + " " + " ".join(line.text for line in lines)
    if "conda" in text or "mamba" in text:
        return "conda"
    if "apt" in text or "Get:" in text:
        return "apt"
    return "pip"
