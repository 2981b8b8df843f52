"""Human validation through a real Label Studio server that the tests start on loopback (from its own
environment, which `.ci/setup dev` creates), with a throwaway data folder: push an evaluation's items, two
annotators answer through the API, pull, validate; bad input is one line; an annotator sees a task in Chromium.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers import CLI

# The module's tests share module-scoped fixtures (a server, a trained adapter, a work folder): one worker
# runs them all, so the fixtures are made once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("label-studio")]
ROOT = Path(__file__).resolve().parent.parent
ADMIN = "admin@rpbench.test"
ADMIN_TOKEN = "5f0c1b9e2d7a4c3b8e6f1a0d9c8b7a6f5e4d3c2b"
ANNOTATORS = {"ann1@rpbench.test": "ann1-pass-8492", "ann2@rpbench.test": "ann2-pass-5173"}


@pytest.fixture(scope="module")
def label_studio(tmp_path_factory):
    """A Label Studio server (URL) with an admin whose legacy token is ADMIN_TOKEN."""
    from rpbench.deployments import label_studio as ls

    folder = Path(os.environ.get("RPBENCH_LABEL_STUDIO", ROOT / ls.DEFAULT_FOLDER))
    if not ls.installed(folder):
        pytest.skip(f"Label Studio is not installed in {folder} (python -m rpbench.deployments.label_studio setup)")
    data = tmp_path_factory.mktemp("label-studio-data")
    from rpbench.deployments.cluster import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (data / "server.log").open("ab")
    env = ls.server_env(data, LABEL_STUDIO_USERNAME=ADMIN, LABEL_STUDIO_PASSWORD="admin-pass-3391",
                        LABEL_STUDIO_USER_TOKEN=ADMIN_TOKEN)
    proc = subprocess.Popen(ls.server_command(folder, port, data, legacy_token=True), env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ls.wait_until_healthy(url, proc)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _session(url: str, email: str, password: str, invite: str | None = None):
    """A logged-in browser-like session (an annotator signing up through the invitation link, or logging in)."""
    import requests

    s = requests.Session()
    page = url + (invite or "/user/login/")
    s.get(page)
    form = {"email": email, "password": password, "csrfmiddlewaretoken": s.cookies.get("csrftoken")}
    reply = s.post(page, data={**form, "how_find_us": "", "allow_newsletters": "false"} if invite else form,
                   headers={"Referer": page})
    assert reply.status_code == 200 and "/user/login" not in reply.url and "/user/signup" not in reply.url, reply.url
    return s


def _personal_token(url: str, session) -> str:
    """The annotator's personal access token, made as the Account page makes it."""
    reply = session.post(url + "/api/token/", headers={"X-CSRFToken": session.cookies.get("csrftoken"),
                                                       "Referer": url})
    assert reply.status_code == 201, reply.text
    return str(reply.json()["token"])


@pytest.fixture(scope="module")
def annotators(label_studio):
    """The two annotators, signed up through the organisation's invitation link: email -> personal token."""
    import requests

    invite = requests.get(label_studio + "/api/invite", headers={"Authorization": f"Token {ADMIN_TOKEN}"},
                          timeout=30).json()["invite_url"]
    return {email: _personal_token(label_studio, _session(label_studio, email, password, invite))
            for email, password in ANNOTATORS.items()}


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory, _server):
    """A finished evaluation (two models under test) on the loopback server."""
    from tests.test_flows import _bench, _respond

    folder = tmp_path_factory.mktemp("evaluated")
    def respond(body: dict) -> str:  # replies that differ from model to model, so annotators can tell them apart
        text = _respond(body)
        return text if text.startswith("{") else f"{text} ({body['model']}, t={body.get('temperature')})"

    _server.reset()
    _server.responder = respond
    models = folder / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{_server.base_url}"\nschema_rules = "vllm"\n'
                      'api_key_env = "RPBENCH_LS_KEY"\nstructured = "json_schema"\ntimeout = 5\n'
                      '[roles.warm]\ntemperature = 0.7\n')
    proc = subprocess.run([*CLI, "eval", "--bench", str(_bench(folder)), "--model", "openai/under-test", "--model",
                           "warm", "--out", str(folder / "eval"), "--models-file", str(models), "--cache",
                           str(folder / "calls.sqlite"), "--resamples", "50"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "RPBENCH_LS_KEY": "sk-ls", "PREFECT_HOME": str(folder / "prefect")})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return folder / "eval"


def _rpbench(*args: str, token: str = ADMIN_TOKEN) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "LABEL_STUDIO_API_KEY": token})


def _client(url: str, token: str):
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=url, api_key=token)


def _answer(client, task_id: int, name: str, choice: str | None, cancelled: bool = False) -> None:
    result = [] if choice is None else [{"from_name": name, "to_name": "response_a" if name == "score" else "response",
                                         "type": "choices", "value": {"choices": [choice]}}]
    client.annotations.create(id=task_id, result=result, lead_time=4.2, was_cancelled=cancelled)


def test_push_annotate_pull_validate(label_studio, annotators, evaluation, tmp_path):
    url = label_studio
    push = ["annotate", "push", "--eval", str(evaluation), "--task", "pairwise", "--url", url, "--project", "rp-pairs",
            "--per-item", "2"]
    first = _rpbench(*push)
    assert first.returncode == 0, first.stderr
    assert "created project 'rp-pairs'" in first.stdout and "pushed 6 new tasks" in first.stdout  # 3 items x 2 models
    again = _rpbench(*push)
    assert "pushed 0 new tasks" in again.stdout and "(6 already there)" in again.stdout
    admin = _client(url, ADMIN_TOKEN)
    (project,) = [p for p in admin.projects.list() if p.title == "rp-pairs"]
    tasks = list(admin.tasks.list(project=project.id, fields="all"))
    assert len(tasks) == 6 and {t.data["shown_first"] for t in tasks} == {"test", "base"}  # randomised, recorded
    keys = {t.data["rpbench_key"] for t in tasks}
    assert len(keys) == 6 and all(k.endswith("|pairwise") for k in keys)
    assert all(t.data["profile"] and t.data["history"] and t.data["response_a"] != t.data["response_b"] for t in tasks)

    # Two annotators, each with their own token: ann1 scores every task (one of them twice: the later
    # answer counts), ann2 scores four, is unsure of one and skips one.
    ann1, ann2 = (_client(url, annotators[e]) for e in ANNOTATORS)
    rng = random.Random(3)
    given: dict[tuple[str, int], int] = {}
    for k, task in enumerate(sorted(tasks, key=lambda t: t.id)):
        raw1 = rng.randint(1, 5)
        _answer(ann1, task.id, "score", str(6 - raw1 if k == 0 else raw1))
        if k == 0:
            _answer(ann1, task.id, "score", str(raw1))  # changed their mind: this one counts
        given[("ann1@rpbench.test", task.id)] = raw1
        if k == 4:
            _answer(ann2, task.id, "score", "unsure")
        elif k == 5:
            _answer(ann2, task.id, "score", None, cancelled=True)
        else:
            given[("ann2@rpbench.test", task.id)] = raw1
            _answer(ann2, task.id, "score", str(raw1))

    out = tmp_path / "labels.jsonl"
    pulled = _rpbench("annotate", "pull", "--url", url, "--project", "rp-pairs", "--out", str(out))
    assert pulled.returncode == 0, pulled.stderr
    assert "10 annotations" in pulled.stdout and "skipped 1, unsure 1, duplicates 1" in pulled.stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    by_task = {t.id: t for t in tasks}
    for row in rows:
        shown = by_task[row["label_studio_task"]].data["shown_first"]
        raw = given[(row["annotator"], row["label_studio_task"])]
        assert row["score_as_shown"] == raw and row["shown_first"] == shown
        assert row["score"] == (raw if shown == "test" else 6 - raw)  # 1 = the reply under test much better
        assert row["lead_time_s"] == pytest.approx(4.2) and row["annotated_at"]
    summary = json.loads((tmp_path / "labels.jsonl.summary.json").read_text())
    assert summary["duplicate_annotations"] == [f"{by_task[min(by_task)].data['rpbench_key']} by ann1@rpbench.test"]

    validated = subprocess.run([*CLI, "validate", "--annotations", str(out), "--eval", str(evaluation)],
                               capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert validated.returncode == 0, validated.stderr
    # The same scores from both annotators on the four tasks both answered: full agreement.
    assert "score (ordinal) 1.000" in validated.stdout
    assert "ann1@rpbench.test/ann2@rpbench.test" in validated.stdout
    agreement = pq.read_table(evaluation / "agreement.parquet").to_pylist()  # the shared judge-vs-people table
    assert {a["benchmark"] for a in agreement} == {"furina"} and "all" in {a["group"] for a in agreement}
    written = (evaluation / "validation.md").read_text()
    assert written.count("as every benchmark reports it") == 1 and "| all | all |" in written


def _pairs_project(url: str, evaluation: Path):
    """The pairwise project the first test makes (pushed here when a test runs alone)."""
    admin = _client(url, ADMIN_TOKEN)
    if not [p for p in admin.projects.list() if p.title == "rp-pairs"]:
        assert _rpbench("annotate", "push", "--eval", str(evaluation), "--task", "pairwise", "--url", url,
                        "--project", "rp-pairs").returncode == 0
    (project,) = [p for p in admin.projects.list() if p.title == "rp-pairs"]
    return project


def test_dimension_projects_in_chinese_and_bad_input_in_one_line(label_studio, evaluation, tmp_path):
    url = label_studio
    _pairs_project(url, evaluation)  # the project of the other kind, for the refusal below
    made = _rpbench("annotate", "push", "--eval", str(evaluation), "--task", "dimension", "--url", url,
                    "--project", "rp-dims", "--language", "zh", "--limit", "2")
    assert made.returncode == 0 and "pushed 2 new tasks" in made.stdout, made.stderr
    admin = _client(url, ADMIN_TOKEN)
    (project,) = [p for p in admin.projects.list() if p.title == "rp-dims"]
    assert "这一轮对话考察的是哪种能力" in project.label_config and 'alias="unsure"' in project.label_config
    # Sampled evenly: two items, two different dimensions.
    dims = {t.data["dimension"] for t in admin.tasks.list(project=project.id, fields="all")}
    assert len(dims) == 2

    no_judgments = tmp_path / "half-eval"
    no_judgments.mkdir()
    (no_judgments / "manifest.json").write_text("{}")
    (no_judgments / "generations.parquet").write_bytes((evaluation / "generations.parquet").read_bytes())
    cases = [
        (("annotate", "pull", "--url", url, "--project", "nothing-here", "--out", str(tmp_path / "x.jsonl")),
         ADMIN_TOKEN, "error: --project: unknown project 'nothing-here' on"),
        (("annotate", "pull", "--url", url, "--project", "rp-dims", "--out", str(tmp_path / "x.jsonl")),
         "not-a-token", "the token in LABEL_STUDIO_API_KEY was refused"),
        (("annotate", "push", "--eval", str(no_judgments), "--task", "pairwise", "--url", url, "--project", "p"),
         ADMIN_TOKEN, "no judgments.parquet: an evaluation without judgments cannot be validated"),
        (("annotate", "push", "--eval", str(evaluation), "--task", "dimension", "--url", url, "--project", "rp-pairs"),
         ADMIN_TOKEN, "'rp-pairs' is not a dimension project"),
    ]
    for args, token, message in cases:
        proc = _rpbench(*args, token=token)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert token not in proc.stderr + proc.stdout


def test_pingpong_conversations_rated_in_label_studio_feed_the_agreement_command(label_studio, annotators,
                                                                               tmp_path, _server):
    from rpbench.samples import sample_path
    from tests.helpers import any_mode_responder

    _server.reset()
    _server.responder = any_mode_responder
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{_server.base_url}"\nschema_rules = "vllm"\napi_key_env = '
                      '"RPBENCH_LS_KEY"\nstructured = "json_schema"\ntimeout = 5\n')
    run = tmp_path / "pingpong"
    made = subprocess.run([*CLI, "pingpong", "run", "--settings", str(sample_path("pingpong", "settings.yaml")),
                           "--model", "player", "--model", "interrogator", "--judge", "pingpong-judge",
                           "--max-turns", "2", "--character", "Captain Mirela Voss", "--out", str(run),
                           "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite"), "--resamples", "50"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "RPBENCH_LS_KEY": "sk-ls", "PREFECT_HOME": str(tmp_path / "prefect")})
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    pushed = _rpbench("annotate", "push", "--eval", str(run), "--task", "pingpong", "--url", label_studio,
                      "--project", "rp-pingpong")
    assert pushed.returncode == 0 and "pushed 6 new tasks" in pushed.stdout  # 2 players x 3 situations, pushed.stdout + pushed.stderr
    admin = _client(label_studio, ADMIN_TOKEN)
    (project,) = [p for p in admin.projects.list() if p.title == "rp-pingpong"]
    tasks = sorted(admin.tasks.list(project=project.id, fields="all"), key=lambda t: t.id)
    assert {t.data["model"] for t in tasks} == {"player", "interrogator"}
    rng = random.Random(5)
    for email in ANNOTATORS:
        client = _client(label_studio, annotators[email])
        for k, task in enumerate(tasks):
            marks = {c: str(1 + (k + rng.randint(0, 1)) % 5) for c in ("in_character", "entertaining", "fluency")}
            marks["fluency"] = "unsure" if k == 0 else marks["fluency"]  # left unrated, never guessed
            client.annotations.create(id=task.id, lead_time=3.0, result=[
                {"from_name": c, "to_name": "history", "type": "choices", "value": {"choices": [v]}}
                for c, v in marks.items()])
    out = tmp_path / "ratings.jsonl"
    pulled = _rpbench("annotate", "pull", "--url", label_studio, "--project", "rp-pingpong", "--out", str(out))
    assert pulled.returncode == 0 and "12 annotations" in pulled.stdout, pulled.stdout + pulled.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum(r["fluency"] is None for r in rows) == 2 and all(r["in_character"] for r in rows)
    agreed = subprocess.run([*CLI, "pingpong", "agreement", "--annotations", str(out), "--run", str(run)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert agreed.returncode == 0, agreed.stderr
    assert "Krippendorff" in agreed.stdout


def test_an_annotator_sees_the_profile_and_both_replies_in_the_browser(label_studio, annotators, evaluation):
    from tests.helpers import headless_chromium
    from tests.test_prefect_server import _until

    url = label_studio
    admin = _client(url, ADMIN_TOKEN)
    project = _pairs_project(url, evaluation)
    task = sorted(admin.tasks.list(project=project.id, fields="all"), key=lambda t: t.id)[0]
    browser = headless_chromium("1400,900")
    try:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        browser.get(url + "/user/login/")
        email, password = next(iter(ANNOTATORS.items()))
        browser.find_element(By.NAME, "email").send_keys(email)
        browser.find_element(By.NAME, "password").send_keys(password)
        browser.find_element(By.CSS_SELECTOR, "button[type=submit], input[type=submit]").click()
        WebDriverWait(browser, 60).until(lambda b: "/user/login" not in b.current_url)
        browser.get(f"{url}/projects/{project.id}/data?task={task.id}")
        # The task's own texts: the first line of the profile and both replies, under the config's headings.
        shown = _until(browser, "Character profile", "Reply A", "Reply B", task.data["profile"].splitlines()[0],
                       task.data["response_a"], task.data["response_b"], seconds=120)
        # The dialogue reads as text (speaker: line), with no player and no timestamps.
        assert task.data["history"].split("\n\n")[0] in shown and "00:00:00" not in shown
        # Both replies in view at 1400x900 without scrolling the page: the context scrolls in its own column.
        for reply in (task.data["response_a"], task.data["response_b"]):
            box = browser.execute_script(
                "const el = [...document.querySelectorAll('*')].filter(e => e.children.length === 0 && "
                "e.textContent.trim() === arguments[0])[0]; if (!el) return null; "
                "const r = el.getBoundingClientRect(); return [r.top, r.bottom, window.innerHeight];", reply)
            assert box is not None, f"no element shows {reply!r}"
            top, bottom, height = box
            assert top >= 0 and bottom <= height, f"{reply!r} is at {top}-{bottom}, the window is {height} high"
        shot = ROOT / ".test-output" / "label-studio-task.png"
        shot.parent.mkdir(exist_ok=True)
        browser.save_screenshot(str(shot))
    finally:
        browser.quit()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
