"""The demo fleet: a seeded, realistic GPU fleet with planted low-utilization causes (see generator)."""

from triage.demo.generator import DemoSummary, default_truth_path, generate_demo_fleet

__all__ = ["DemoSummary", "default_truth_path", "generate_demo_fleet"]
