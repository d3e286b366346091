"""The one data model every ingestor yields and every later stage reads.

A ``Trajectory`` is one agent run on one task, a ``Step`` one assistant turn and the observation that answered it;
what a format does not carry is ``None``, never 0. docs/architecture.md, "Pipeline"; per format: docs/formats.md.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterable

from earlyeval.core.render import tool_call_text

KINDS: tuple[str, ...] = ("edit", "test", "search", "view", "submit", "other")


@dataclass
class Action:
    """One tool call or shell command inside a step."""

    tool: str  # "bash", "str_replace_editor", "search_code", a tau2 API name, ...
    text: str  # the command line, or the arguments rendered as text
    kind: str = "other"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Step:
    index: int
    action: str  # all actions of the turn, one per line (or the final answer)
    kind: str  # primary kind of the turn (see ``primary_kind``)
    thought: str = ""
    observation: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    error: bool | None = None
    actions: list[Action] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Step":
        acts = [a if isinstance(a, Action) else Action(**a) for a in (d.get("actions") or [])]
        return cls(
            index=int(d["index"]),
            action=d.get("action") or "",
            kind=d.get("kind") or "other",
            thought=d.get("thought") or "",
            observation=d.get("observation") or "",
            input_tokens=_opt_int(d.get("input_tokens")),
            output_tokens=_opt_int(d.get("output_tokens")),
            cached_tokens=_opt_int(d.get("cached_tokens")),
            cost_usd=_opt_float(d.get("cost_usd")),
            error=None if d.get("error") is None else bool(d.get("error")),
            actions=acts,
        )


@dataclass
class Task:
    task_id: str
    prompt: str = ""
    gold_patch: str | None = None
    test_patch: str | None = None
    fail_to_pass: list[str] | None = None
    pass_to_pass: list[str] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Task":
        return cls(
            task_id=d["task_id"],
            prompt=d.get("prompt") or "",
            gold_patch=d.get("gold_patch"),
            test_patch=d.get("test_patch"),
            fail_to_pass=_opt_list(d.get("fail_to_pass")),
            pass_to_pass=_opt_list(d.get("pass_to_pass")),
            meta=dict(d.get("meta") or {}),
        )


@dataclass
class Trajectory:
    run_id: str
    agent: str
    bench: str
    task_id: str
    steps: list[Step]
    outcome: int | None  # 1 resolved, 0 not, None unlabelled
    meta: dict[str, Any] = field(default_factory=dict)  # model, scaffold, source_file, ...
    prompt: str = ""  # the task as the agent saw it (first user message), may be empty

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "agent": self.agent,
            "bench": self.bench,
            "task_id": self.task_id,
            "outcome": self.outcome,
            "prompt": self.prompt,
            "meta": self.meta,
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Trajectory":
        meta = d.get("meta") or {}
        if isinstance(meta, str):
            meta = json.loads(meta)
        outcome = d.get("outcome")
        return cls(
            run_id=d["run_id"],
            agent=d["agent"],
            bench=d["bench"],
            task_id=d["task_id"],
            steps=[s if isinstance(s, Step) else Step.from_dict(s) for s in d.get("steps") or []],
            outcome=None if outcome is None or outcome != outcome else int(outcome),
            meta=dict(meta),
            prompt=d.get("prompt") or "",
        )


# the largest usage one step can plausibly report: far above any context window or bill, far below int64
MAX_TOKENS_PER_STEP = 10**9
MAX_COST_PER_STEP = 1e6


def token_count(v: Any) -> int | None:
    """A token count, or None when it is unknown or impossible (not an integer, NaN, negative, > 1e9):
    unknown is unknown, never 0 and never taken at face value."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, float):
        if not math.isfinite(v) or not v.is_integer():
            return None
        v = int(v)
    elif not isinstance(v, int):
        try:
            import numbers

            if not isinstance(v, numbers.Integral):  # numpy ints pass; strings, objects do not
                return None
            v = int(v)
        except Exception:
            return None
    return v if 0 <= v <= MAX_TOKENS_PER_STEP else None


def cost_value(v: Any) -> float | None:
    """A step's cost in USD, or None when unknown or impossible (not a number, NaN/inf, negative, > 1e6)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        import numbers

        if not isinstance(v, numbers.Real):
            return None
        f = float(v)
    except Exception:
        return None
    return f if math.isfinite(f) and 0.0 <= f <= MAX_COST_PER_STEP else None


def _opt_int(v: Any) -> int | None:
    return token_count(v)


def _opt_float(v: Any) -> float | None:
    return cost_value(v)


def _opt_list(v: Any) -> list[str] | None:
    if v is None:
        return None
    if isinstance(v, str):
        v = json.loads(v)
    return [str(x) for x in v]


# --------------------------------------------------------------------------
# Format-independent action taxonomy.
#
# Every ingestor calls ``classify_action(tool, text)`` so that "edit", "test",
# ... mean the same in every format.  Order matters: a command that both
# searches and runs tests (``pytest -k foo | grep``) is a test.
# --------------------------------------------------------------------------

_SUBMIT_RE = re.compile(
    r"(^|\b)(submit|finish|complete_task_and_submit_final_output|mini_swe_agent_final_output|task_complete|done)\b",
    re.I,
)
_TEST_RE = re.compile(
    r"\b(pytest|py\.test|unittest|runtests\.py|tox|nosetests|manage\.py\s+test|bin/test|make\s+test|"
    r"npm\s+test|go\s+test|cargo\s+test|python[0-9.]*\s+(-m\s+)?\S*(test|reproduc|repro|check|verify|debug)\S*)",
    re.I,
)
_EDIT_RE = re.compile(
    r"(\bsed\s+-i|\bperl\s+-[a-z]*i|\bpatch\b\s|\bgit\s+apply|\bcat\s+(>|<<)|>\s*[\w./-]+\.\w+\s*<<|"
    r"\bcat\s+<<.*>\s*\S|\btee\b|\bed\s|^edit\s|\bcreate\s|\bstr_replace\b|\binsert\b|\bappend\b|"
    r"\bwrite_file\b|\bapply_change|\brequest_for_change|\bedit_file|\bfile_editor\b.*(create|str_replace|insert)|"
    r"\bmv\s|\brm\s|\bcp\s|\bmkdir\s|\btouch\s|>>?\s*[\w./-]+\.(py|txt|cfg|toml|ini|rst|md|json|yaml|yml)\b)",
    re.I | re.M,
)
_SEARCH_RE = re.compile(
    r"(\bgrep\b|\brg\b|\bag\s|\bfind\b|\bfind_file\b|\bsearch_dir\b|\bsearch_file\b|\bsearch_code\b|"
    r"\bfind_class\b|\bfind_function\b|\bsemantic_search\b|\bsearch\w*|\bls\b|\btree\b|\blocate\b|\bgit\s+(log|grep))",
    re.I,
)
_VIEW_RE = re.compile(
    r"(\bcat\b|\bhead\b|\btail\b|\bsed\s+-n|\bnl\b|\bless\b|\bmore\b|\bopen\b|\bgoto\b|\bscroll_(up|down)\b|"
    r"\bview\b|\bread\w*|\bget_\w+|\blist_\w+|\bshow\b|\bgit\s+(diff|show|status)|\bawk\b|\bwc\b)",
    re.I,
)

# tool names that decide the kind on their own, whatever the arguments
_TOOL_KIND: dict[str, str] = {
    "submit": "submit",
    "finish": "submit",
    "reject": "submit",
    "done": "submit",
    "local-claim_done": "submit",
    "search_code": "search",
    "find_class": "search",
    "find_function": "search",
    "find_code_snippet": "search",
    "semantic_search": "search",
    "search": "search",
    "identify": "view",
    "view_code": "view",
    "request_more_context": "view",
    "add_code_to_context": "view",
    "requestmorecontext": "view",
    "apply_change": "edit",
    "request_for_change": "edit",
    "requestcodechange": "edit",
    "edit": "edit",
    "create": "edit",
    "search_replace": "edit",
    # SWE-agent 0.x interface commands (also CodeR's); exit_* = forced exit with autosubmission
    "open": "view",
    "goto": "view",
    "scroll_up": "view",
    "scroll_down": "view",
    "review": "view",
    "find_file": "search",
    "search_file": "search",
    "search_dir": "search",
    "exit_cost": "submit",
    "exit_context": "submit",
    "exit_format": "submit",
    "exit_api": "submit",
    "exit_error": "submit",
    # turns that neither read nor change anything: delegation and hand-back in
    # multi-agent scaffolds, declining a requested change, picking line ranges
    "plan": "other",
    "succeed": "other",
    "fail": "other",
    "reject_change": "other",
    "decide_relevance": "other",
    "clarify_code_change": "other",
    "specify_lines": "other",
}

# tool-name verbs for API-style tools (tau2, Toolathlon, MCP servers, ...).  A tool
# name is split into words (snake, kebab and camelCase); the first word that is a
# known verb decides, so ``check_apn_settings`` is a read (not "set") and
# ``can_send_mms`` a check (not "send").  HTTP-method words (``notion-API-post-search``)
# defer to a later read verb.  A few Spanish verbs occur in tau2's custom domains.
_API_WRITE_VERBS = frozenset(
    "update create modify cancel book write edit delete remove add set send exchange return transfer toggle "
    "enable disable reset make post put patch insert apply upload move rename grant refund submit register "
    "record process issue emit enroll scale format highlight merge fork push commit load export attach "
    "reboot reseat refuel resume renew suspend disconnect connect activate deactivate change assign "
    "crear anular enviar adjuntar registrar actualizar modificar cancelar".split()
)
_API_READ_VERBS = frozenset(
    "get list find search read query fetch lookup check describe show view calculate think retrieve can is has "
    "verify count browse inspect download open track consult "
    "buscar consultar obtener listar identificar validar verificar ver".split()
)
_API_SEARCH_VERBS = frozenset("search find query lookup browse buscar consultar".split())
_HTTP_VERBS = frozenset({"post", "put", "patch"})
_API_HANDOFF = re.compile(r"(transfer|escalate)_?to_?(human|agent)", re.I)
_API_RUNNER = re.compile(
    r"(run|execute|exec)[_\-]?(command|cmd|shell|bash)|(^|[_\-])(terminal|shell)[_\-](run|exec)",
    re.I,
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _tool_words(tool: str) -> list[str]:
    return [w for w in re.split(r"[_\-\s./:]+", _CAMEL.sub("_", tool or "").lower()) if w]


def _classify_api(tool: str, body: str) -> str | None:
    """Kind of an API-style tool call from the verbs in its name; None if no verb is known."""
    name = (tool or "").strip()
    if _API_HANDOFF.search(_CAMEL.sub("_", name)):
        return "submit"  # handing the conversation to a human ends the agent's work
    if _API_RUNNER.search(name):
        try:
            args = json.loads(body) if body.strip().startswith("{") else None
        except ValueError:
            args = None
        cmd = next(
            (
                args[k]
                for k in ("command", "cmd", "script")
                if isinstance(args, dict) and isinstance(args.get(k), str)
            ),
            None,
        )
        return _classify_shell(cmd if cmd is not None else body)
    words = _tool_words(name)
    for i, w in enumerate(words):
        if w in _HTTP_VERBS:
            later = next((v for v in words[i + 1 :] if v in _API_READ_VERBS), None)
            if later is not None:
                return "search" if later in _API_SEARCH_VERBS else "view"
            return "edit"
        if w in _API_WRITE_VERBS:
            return "edit"
        if w in _API_READ_VERBS:
            return "search" if w in _API_SEARCH_VERBS else "view"
    return None


def classify_action(tool: str, text: str) -> str:
    """Map one action to the edit/test/search/view/submit/other taxonomy."""
    t = (tool or "").strip().lower()
    body = text or ""
    if t in _TOOL_KIND:
        return _TOOL_KIND[t]
    if t in {
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "file_editor",
        "edit_file",
        "editor",
    }:
        sub = body.split(None, 1)[0].lower() if body.strip() else ""
        if sub in {"create", "str_replace", "insert", "undo_edit", "write"}:
            return "edit"
        return "view"
    if t in {
        "bash",
        "execute_bash",
        "shell",
        "cmd",
        "run",
        "terminal",
        "execute_command",
        "ipython",
        "execute_ipython_cell",
        "",
    }:
        return _classify_shell(body)
    # API-style tools: decide by the verb in the tool name
    if _SUBMIT_RE.search(t):
        return "submit"
    api = _classify_api(tool, body)
    if api is not None:
        return api
    return _classify_shell(body) if body else "other"


# tool names of a framework that the taxonomy does not know, mapped to ones it does (for the kind only;
# Action.tool keeps the framework's own name): inspect_ai's editor and stateful shell
KIND_ALIAS = {"text_editor": "str_replace_editor", "bash_session": "bash"}


def call_action(tool: Any, arguments: Any) -> Action:
    """One raw tool call as an Action: its text by ``render.tool_call_text``, its kind by the taxonomy
    (``KIND_ALIAS`` first).  The live Step builder and the ingestors of the same framework share it."""
    tool = str(tool or "")
    text = tool_call_text(tool, arguments)
    return Action(tool=tool, text=text, kind=classify_action(KIND_ALIAS.get(tool, tool), text))


def _classify_shell(cmd: str) -> str:
    c = cmd.strip()
    if not c:
        return "other"
    first = c.splitlines()[0] if c else ""
    if re.search(
        r"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT", c
    ) or re.match(r"^\s*(submit|finish)\b", first, re.I):
        return "submit"
    if re.match(r"^\s*git\s+(checkout|restore|stash)\b", first):
        return "edit"  # reverting the working tree is an edit of the diff
    if _TEST_RE.search(c):
        return "test"
    if _EDIT_RE.search(c):
        return "edit"
    if _SEARCH_RE.search(first):
        return "search"
    if _VIEW_RE.search(first):
        return "view"
    if re.match(r"^\s*python[0-9.]*\s", first):
        return "test"  # running a script is the agent checking behaviour
    return "other"


_KIND_PRIORITY = {"submit": 0, "edit": 1, "test": 2, "search": 3, "view": 4, "other": 5}


def primary_kind(kinds: Iterable[str]) -> str:
    """The kind of a multi-action turn: the most consequential of its actions."""
    ks = list(kinds)
    if not ks:
        return "other"
    return min(ks, key=lambda k: _KIND_PRIORITY.get(k, 9))


def make_step(
    index: int,
    actions: list[Action],
    *,
    thought: str = "",
    observation: str = "",
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cached_tokens: int | None = None,
    cost_usd: float | None = None,
    error: bool | None = None,
    final_answer: str | None = None,
) -> Step:
    """Build a Step with kinds filled in by the shared taxonomy.  The caller's Actions are not changed: an
    Action without a kind is copied with the kind filled in (the same Action may be handed to two steps)."""
    actions = [
        replace(a, kind=classify_action(a.tool, a.text)) if not a.kind or a.kind == "other" else a
        for a in actions
    ]
    text = "\n".join(
        a.text if a.tool in ("bash", "") else f"{a.tool} {a.text}".strip() for a in actions
    )
    if not actions and final_answer:
        text = final_answer
    kind = primary_kind(a.kind for a in actions) if actions else "other"
    return Step(
        index=index,
        action=text,
        kind=kind,
        thought=thought or "",
        observation=observation or "",
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached_tokens,
        cost_usd=cost_usd,
        error=error,
        actions=actions,
    )
