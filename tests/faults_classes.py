"""Every fault case of the suite, in one list: the first suites (tests/faults.py, faults24.py, faults29.py) and the
classes named by subject (pass state, report page, duplicates within a folder, settings that contradict or say
nothing, a monitor's settings, the step readers, bounds, runs that do nothing).  ``XFAIL``: cases known to fail until another change lands (name -> why), held to ``xfail(strict=True)``
by tests/test_faults.py and counted apart by tools/fault_summary.py.  Shared by both."""

from __future__ import annotations

from typing import Callable

from faults import CASES, Env, class_of
from faults24 import CASES24
from faults29 import CASES29
from faults_bounds import CASES_BOUNDS
from faults_do_nothing import CASES_DO_NOTHING
from faults_do_nothing import XFAIL as XFAIL_DO_NOTHING
from faults_duplicates import CASES_DUPLICATES
from faults_eval_settings import CASES_EVAL_SETTINGS
from faults_pass_state import CASES_PASS_STATE
from faults_readers import CASES_READERS
from faults_report_page import CASES_REPORT_PAGE
from faults_settings import CASES_SETTINGS

Case = tuple[str, str, Callable[[Env], tuple[str, str]]]

# by subject, each with cases of its own
BY_SUBJECT: list[Case] = [
    *CASES_PASS_STATE,
    *CASES_REPORT_PAGE,
    *CASES_DUPLICATES,
    *CASES_EVAL_SETTINGS,
    *CASES_SETTINGS,
    *CASES_READERS,
    *CASES_BOUNDS,
    *CASES_DO_NOTHING,
]
ALL: list[Case] = [(class_of(f, n), n, fn) for f, n, fn in CASES] + CASES24 + CASES29 + BY_SUBJECT
XFAIL: dict[str, str] = {**XFAIL_DO_NOTHING}
