"""What skills cost a start (issue 28): 100 skills in a project's ``.claude/skills/``.

- Discovery, in a fresh process that has already imported what ``etcode run`` imports
  anyway: the import of the skill modules, finding and reading the 100 front matters, the
  list for the prompt (full and lean) and the Skill tool's schema. Target: < 15 ms. Three
  kinds of front matter: plain ``key: text`` lines and quoted descriptions (read without
  YAML: the published skills are written so) and folded ``>-`` descriptions (read by YAML,
  libyaml's loader when installed): the worst case.
- The linked layout: the 100 skills in ``.agents/skills/``, linked from ``.claude/skills/``
  in a real git repository (each link is checked; git is asked once whether the targets are
  ignored): the CPU time of those child processes is reported too.
- With no skill: the check that no skill folder exists (a few ``stat`` calls; nothing of
  skills is imported then).
- Whole ``etcode run`` (one answer from the fake server), no skills vs 100: informative
  only, the noise of a process start is larger than the difference.
- How much the system prompt grows: the names and descriptions, and the template's few lines.

Run: ``python benchmarks/bench_skills.py`` (``--no-run``: discovery figures only)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_llm import FakeLLM, Reply  # noqa: E402

SKILLS = 100
TARGET_MS = 15.0
REPEATS = 7
FIXTURES = ROOT / "tests" / "fixtures" / "skills"

#: Runs in a fresh process: the modules a run imports before the skills, then the skills' work.
DISCOVERY = """
import os, sys, time
from pathlib import Path
import etcode.wiring.runtime, etcode.wiring.runs, etcode.api, etcode.config.loader, etcode.prompt.system
from etcode.config.schema import Config
from etcode.instance import describe
project = Path(sys.argv[1])
info = describe(project)
config = Config()
class Settings:
    skills = []
started, cpu, kids = time.perf_counter(), time.process_time(), os.times()
present = etcode.wiring.runtime._may_have_skills(Settings(), config, info)
if present:
    from etcode.extensions.skills import find_skills
    from etcode.extensions.skill_prompt import lean_skills_part, skills_part
    from etcode.extensions.skill_tool import SkillTool
    found = find_skills(info.directory, info.worktree, config=config)
    assert len(found) == int(sys.argv[2]) and not found.warnings, found.warnings
    skills_part(found.skills), lean_skills_part(found.skills), SkillTool(found).schema()
elapsed, cpu, after = time.perf_counter() - started, time.process_time() - cpu, os.times()
children = (after.children_user + after.children_system) - (kids.children_user + kids.children_system)
print(cpu * 1000, elapsed * 1000, children * 1000, [m for m in sys.modules if m.startswith("etcode.extensions")])
"""


def descriptions() -> list[str]:
    """The published skills' descriptions, cycled."""
    import yaml

    found = []
    for name in sorted(os.listdir(FIXTURES)):
        path = FIXTURES / name / "SKILL.md"
        if path.is_file():
            found.append(
                " ".join(str(yaml.safe_load(path.read_text().split("---")[1])["description"]).split())
            )
    return found


def make_project(root: Path, count: int, kind: str) -> Path:
    """A git project with ``count`` skills in ``.claude/skills/`` (each with a bundled file),
    their descriptions ``plain``, ``quoted`` or ``folded``; ``linked``: plain ones kept in
    ``.agents/skills/`` and linked from ``.claude/skills/`` (a layout teams use to serve
    several agents; each link is checked, git asked whether its target is ignored)."""
    project = root / kind
    if kind == "linked":
        project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    else:
        (project / ".git").mkdir(parents=True)
    texts = descriptions()
    for index in range(count):
        home = ".agents" if kind == "linked" else ".claude"
        folder = project / home / "skills" / f"skill-{index:03d}"
        if kind == "linked":
            (project / ".claude" / "skills").mkdir(parents=True, exist_ok=True)
            (project / ".claude" / "skills" / folder.name).symlink_to(f"../../.agents/skills/{folder.name}")
        (folder / "reference").mkdir(parents=True)
        text = texts[index % len(texts)]
        description = {
            "plain": f"{text} Case {index}.",
            "linked": f"{text} Case {index}.",
            "quoted": json.dumps(f"{text} Case {index}: more."),
            "folded": f">-\n  {text}\n  Case {index}: more.",
        }[kind]
        front = f"name: skill-{index:03d}\ndescription: {description}\nlicense: Apache-2.0\n"
        (folder / "SKILL.md").write_text(f"---\n{front}---\n# Skill {index}\n\nSteps.\n" + "More.\n" * 200)
        (folder / "reference" / "notes.md").write_text("notes\n")
    return project


def bytecode_env(**extra: str) -> dict[str, str]:
    """The environment of a measured process: this checkout first, and compiled modules
    kept (``PYTHONDONTWRITEBYTECODE`` would compile every etcode module at each start)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def discovery_ms(project: Path, count: int) -> tuple[float, float, list[str], float]:
    """Median CPU time and wall time (ms) of discovery in a fresh process, the skill
    modules it imported, and the median CPU time of its child processes (git). CPU time is
    the figure: on a shared machine the wall time mostly measures the others' load."""
    cpus: list[float] = []
    kids: list[float] = []
    times: list[float] = []
    modules: list[str] = []
    for attempt in range(REPEATS + 1):  # the first writes the bytecode, as an install has it
        proc = subprocess.run(
            [sys.executable, "-c", DISCOVERY, str(project), str(count)],
            capture_output=True,
            text=True,
            timeout=120,
            env=bytecode_env(),
        )
        if proc.returncode != 0:
            raise SystemExit(f"discovery failed: {proc.stderr.strip()[-400:]}")
        cpu, wall, children, rest = proc.stdout.strip().split(" ", 3)
        if attempt == 0:
            continue
        cpus.append(float(cpu))
        kids.append(float(children))
        times.append(float(wall))
        modules = json.loads(rest.replace("'", '"'))  # the list printed above
    return statistics.median(cpus), statistics.median(times), modules, statistics.median(kids)


def run_seconds(project: Path, llm: FakeLLM, home: Path) -> float:
    config = {
        "model": "fake/test-model",
        "provider": [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}],
    }
    (project / "etcode.json").write_text(json.dumps(config))
    env = bytecode_env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    times = []
    for _ in range(REPEATS):
        llm.script(Reply(text="hi"))
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "etcode", "run", "hello"],
            cwd=project,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        times.append(time.perf_counter() - started)
        if proc.returncode != 0:
            raise SystemExit(f"etcode run failed: {proc.stderr.strip()[-400:]}")
    return statistics.median(times)


def reference_loop_ms() -> float:
    """Median CPU time (ms) of a fixed pure-Python loop (the sum of a million squares): the
    speed of this machine at this moment, to read the other figures by (``python -c pass``
    would also measure whatever the site's ``.pth`` files import)."""
    times = []
    for _ in range(REPEATS):
        started = time.process_time()
        sum(i * i for i in range(1_000_000))
        times.append((time.process_time() - started) * 1000)
    return statistics.median(times)


def prompt_growth(project: Path) -> dict[str, int]:
    from etcode.extensions.skill_prompt import lean_skills_part, skills_part
    from etcode.extensions.skills import find_skills

    found = find_skills(project, project)
    listed = sum(len(f"- {s.name}: {s.description}\n") for s in found.skills)
    return {
        "names_and_descriptions": listed,
        "full": len(skills_part(found.skills).text) + 2,  # joined to the others by a blank line
        "lean": len(lean_skills_part(found.skills).text) + 2,
    }


def main() -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        os.environ["HOME"] = str(home)  # no skills of the user's own in the figures
        os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
        empty = root / "empty"
        (empty / ".git").mkdir(parents=True)
        kinds = ("plain", "quoted", "folded", "linked")
        projects = {kind: make_project(root, SKILLS, kind) for kind in kinds}
        plain = projects["plain"]
        figures["reference"] = reference_loop_ms()
        print(
            f"scale: the reference loop (sum of 1,000,000 squares) takes {figures['reference']:.0f} ms CPU here"
        )
        figures["none"], wall, none_modules, _ = discovery_ms(empty, 0)
        print(
            f"no skill: {figures['none'] * 1000:.0f} µs CPU ({wall * 1000:.0f} µs wall; "
            f"skill modules imported: {none_modules or 'none'})"
        )
        for kind, project in projects.items():
            figures[kind], wall, _, children = discovery_ms(project, SKILLS)
            figures[f"{kind}_wall"], figures[f"{kind}_children"] = wall, children
            verdict = "ok" if figures[kind] + children < TARGET_MS else "OVER TARGET"
            print(
                f"{SKILLS} skills, {kind} front matter: {figures[kind]:.1f} ms CPU + {children:.1f} ms "
                f"in child processes ({wall:.1f} ms wall; target < {TARGET_MS:.0f} ms: {verdict})"
            )
        growth = prompt_growth(plain)
        print(
            f"system prompt: +{growth['full']:,} characters for {SKILLS} skills "
            f"({growth['names_and_descriptions']:,} of them the names and descriptions); "
            f"lean prompt: +{growth['lean']:,}"
        )
        figures["growth_overhead"] = growth["full"] - growth["names_and_descriptions"]
        if "--no-run" in sys.argv:
            return figures
        with FakeLLM() as llm:
            figures["run_none"] = run_seconds(empty, llm, home)
            figures["run_plain"] = run_seconds(plain, llm, home)
        print(
            f"etcode run, one answer: {figures['run_none'] * 1000:.0f} ms without skills, "
            f"{figures['run_plain'] * 1000:.0f} ms with {SKILLS} (median of {REPEATS}; process noise included)"
        )
    return figures


if __name__ == "__main__":
    main()
