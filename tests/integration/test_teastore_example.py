"""examples/teastore/teastore-browse.jmx against `loadguard target` with the real JMeter.

The plan's extractors are TeaStore's own browse profile's (pinned by
tests/unit/test_target_pages.py), so every sampler succeeding here -- with each extracted
id actually used in a later URL -- is the compatibility check for TeaStore's profile.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from loadguard.jmeter.home import JMeterHome, jmeter_command
from loadguard.lab.target.model import build_model
from loadguard.lab.target.runner import running_target
from tests.jmeter_runner import read_jtl, run_jmeter

pytestmark = pytest.mark.jmeter

PLAN = Path(__file__).parents[2] / "examples" / "teastore" / "teastore-browse.jmx"
SAMPLERS = {
    "Home",
    "Login",
    "List Products",
    "Look at Product",
    "Add Product to Cart",
    "List Products with different page",
    "Add Product 2 to Cart",
    "Logout",
}


def test_example_plan_runs_against_the_target_and_every_sampler_succeeds(
    jmeter_home: JMeterHome, tmp_path: Path
) -> None:
    model = build_model("shop", workers=8, queue=100, service_s=0.01)
    with running_target(model, seed=1) as target:
        jtl, proc = run_jmeter(
            jmeter_home,
            PLAN,
            tmp_path,
            props={
                "hostname": "127.0.0.1",
                "port": target.port,
                "numUser": 4,
                "rampUp": 1,
                "duration": 12,
                "loadguard.tpm": 1800,  # 30 samples/s, paced by the plan's Elastic Timer
            },
            timeout=90,
        )
        counters = target.counters()
    assert proc.returncode == 0, proc.stdout
    df = read_jtl(jtl)
    top = df[~df["label"].str.contains(r"-\d+$")]
    failed = df[~df["success"]]
    assert failed.empty, failed[["label", "responseCode", "URL"]].to_string()
    assert set(top["label"]) == SAMPLERS
    # Redirects were followed: each POST's sub-results are the 302 and the page behind it.
    assert set(df.loc[df["label"] == "Login-0", "responseCode"]) == {302}
    assert df.loc[df["label"] == "Add Product to Cart-1", "URL"].str.endswith("/cart").all()
    # The extracted values were real ids, used in the next requests' URLs.
    product_urls = df.loc[df["label"] == "Look at Product", "URL"]
    assert product_urls.map(lambda u: re.search(r"[?&]id=[0-9]+$", u) is not None).all()
    paged = df.loc[df["label"] == "List Products with different page", "URL"]
    assert paged.map(lambda u: re.search(r"category=[1-6]&page=[1-5]$", u) is not None).all()
    # Every HTTP request the plan made reached the gate (redirect targets included).
    http_requests = (
        len(df)
        - len(top[top["label"].isin({"Login", "Logout"})])
        - len(top[top["label"].str.startswith("Add Product")])
    )
    # (a sample in flight when the scheduler stops a thread may be served but not recorded)
    assert http_requests <= counters.served <= http_requests + 4 and counters.rejected == 0
    # The Elastic Timer paced the plan: about 30 samples/s once sampling began (the
    # first seconds go to compiling its Groovy script on a busy machine).
    span_s = (top["timeStamp"].max() - top["timeStamp"].min()) / 1000.0
    assert len(top) >= 60, len(top)
    assert 22.0 <= (len(top) - 4) / span_s <= 36.0, (len(top), span_s)


def _run_until_shutdown(
    home: JMeterHome, plan: Path, out: Path, props: dict[str, object], seconds: float
) -> tuple[Path, int]:
    """Run a plan with no duration of its own; after ``seconds`` send ``Shutdown`` to *this*
    JMeter's UDP port (read from its stdout), never to a guessed one."""
    jtl = out / "teastore.jtl"
    args = ["-n", "-t", str(plan), "-l", str(jtl), "-j", str(out / "teastore.log")]
    args += [f"-J{k}={v}" for k, v in props.items()]
    args.append("-Jjmeterengine.force.system.exit=true")
    proc = subprocess.Popen(
        jmeter_command(home, args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert proc.stdout is not None
        port = None
        for line in proc.stdout:
            match = re.search(r"Waiting for possible Shutdown.* on port (\d+)", line)
            if match:
                port = int(match.group(1))
                break
        assert port is not None, "JMeter printed no UDP port"
        time.sleep(seconds)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(b"Shutdown", ("127.0.0.1", port))
        proc.stdout.read()
        return jtl, proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(
    not os.environ.get("TEASTORE_BROWSE_JMX"),
    reason="set TEASTORE_BROWSE_JMX to a copy of TeaStore's examples/jmeter/"
    "teastore_browse_nogui.jmx (not shipped here) to run it unmodified",
)
def test_teastores_own_browse_profile_runs_unmodified(
    jmeter_home: JMeterHome, tmp_path: Path
) -> None:
    plan = Path(os.environ["TEASTORE_BROWSE_JMX"])
    model = build_model("shop", workers=8, queue=100, service_s=0.01)
    with running_target(model, seed=1) as target:
        props: dict[str, object] = {
            "hostname": "127.0.0.1",
            "port": target.port,
            "numUser": 4,
            "rampUp": 1,
        }
        jtl, code = _run_until_shutdown(jmeter_home, plan, tmp_path, props, seconds=8)
    assert code == 0
    df = read_jtl(jtl)
    assert len(df) > 0 and df["success"].all()
    assert set(df[~df["label"].str.contains(r"-\d+$")]["label"]) == SAMPLERS
