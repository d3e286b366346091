"""--scheduler faults as one-line errors (issue 29 item 4): an address where another service listens, tls:// without
certificates.  Network: 127.0.0.1 only, a listener thread this module starts."""

from __future__ import annotations

import socket
import threading

import pytest

pytest.importorskip("distributed")

from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.core.errors import SettingError
from earlyeval.scale.cluster import connect


@pytest.fixture
def not_dask():
    """A TCP listener on 127.0.0.1 that answers every connection with HTTP, not the dask protocol."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except (socket.timeout, OSError):
                continue
            with c:
                try:
                    c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 20)
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join(5)
    srv.close()


def test_an_address_that_is_not_a_dask_scheduler_is_a_setting_error(not_dask):
    with pytest.raises(SettingError, match="no dask scheduler answered there") as e:
        with connect(not_dask):
            pass
    assert e.value.source == "--scheduler" and e.value.key == not_dask


def test_tls_without_certificates_is_a_setting_error_naming_the_config(not_dask):
    addr = not_dask.replace("tcp://", "tls://")
    with pytest.raises(SettingError, match="needs certificates: set distributed.comm.tls.ca-file"):
        with connect(addr):
            pass


@pytest.mark.parametrize("scheme", ["tcp", "tls"])
def test_the_cli_prints_one_line_and_exits_2(not_dask, scheme):
    addr = not_dask.replace("tcp://", f"{scheme}://")
    r = CliRunner().invoke(app, ["ingest", "--bench", "swebench", "--scheduler", addr])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and f"error: --scheduler: '{addr}':" in r.output
    assert len([line for line in r.output.splitlines() if line.startswith("error:")]) == 1


def test_ctrl_c_under_scheduler_is_one_line_exit_130_and_the_cluster_closes(monkeypatch):
    """Issue 29 item 4: Ctrl-C (KeyboardInterrupt) inside a verb on a running scheduler: one line, exit 130, no
    traceback, and the verb's client is closed (the scheduler sees no client left)."""
    from distributed import Client, LocalCluster

    import earlyeval.app.stages.ingest as ingest_stage

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest_stage, "ingest_bench", interrupted)
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            protocol="tcp://",
            host="127.0.0.1",
            dashboard_address=":0",
        ) as lc,
        Client(lc) as mine,
    ):
        r = CliRunner().invoke(
            app, ["ingest", "--bench", "swebench", "--scheduler", lc.scheduler_address]
        )
        assert r.exit_code == 130, r.output
        assert "Traceback" not in r.output and r.output.count("error: interrupted (Ctrl-C)") == 1
        assert set(mine.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.clients))) <= {
            mine.id,
            "fire-and-forget",
        }


def test_local_workers_leave_ctrl_c_to_the_driver():
    """A terminal's Ctrl-C reaches the whole process group: the LocalCluster's worker processes ignore SIGINT (the
    driver closes them), so none prints its own KeyboardInterrupt traceback; the driver keeps its handler."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    with connect("local:1") as c:
        assert list(c.run(lambda: signal.getsignal(signal.SIGINT) == signal.SIG_IGN).values()) == [
            True
        ]
        assert signal.getsignal(signal.SIGINT) is before
