"""The sample viewer of every registered mode, built by the mode's own flows from a loopback run and driven
in headless Chromium: a search finds a known sample, a filter narrows the list, a deep link opens that
sample, the samples of one item sit side by side, and model text holding markup is shown as text."""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from rpbench.flows.kit.front.registry import modes
from rpbench.tasks.reports.viewer import VIEWER_FILE, read_viewer
from tests.helpers import TEST_KEY_ENV, any_mode_responder, headless_chromium, rpbench

ROOT = Path(__file__).resolve().parent.parent
SHOTS = Path(os.environ.get("RPBENCH_TEST_OUTPUT", ROOT / ".test-output"))
MODES = sorted(modes())
# Every free-text reply carries this: a page that ran it would set window.__pwned.
MARKUP = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"


def _responder(body: dict) -> str:
    reply = any_mode_responder(body)
    if not body.get("response_format"):
        return f"{reply} {MARKUP}"
    # A reply asked for as JSON carries the markup in its free-text fields (a reply in character, a reason).
    data = json.loads(reply)
    if isinstance(data, dict):
        data.update({k: f"{v} {MARKUP}" for k, v in data.items() if k in ("response", "reasoning") and isinstance(v, str)})
    return json.dumps(data)


def _models(tmp_path: Path, server) -> Path:
    path = tmp_path / "models.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{server.base_url}"\nschema_rules = "vllm"\n'
                    f'api_key_env = "{TEST_KEY_ENV}"\nstructured = "json_schema"\n')
    return path


def _viewer_of(mode: str, work: Path, server, monkeypatch) -> Path:
    """Run the mode's smoke scenario in this process; the viewer its last evaluating step wrote."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    server.responder = _responder
    models, cache = _models(work, server), work / "calls.sqlite"
    found = None
    for step in modes()[mode].smoke_steps(work):
        extra = ["--models-file", str(models), "--cache", str(cache)] if step.uses_models else []
        ran = rpbench(*step.args, *extra)
        assert ran.returncode == 0, f"{step.name}: {ran.stderr[-2000:]}"
        if (step.out / VIEWER_FILE).is_file():
            found = step.out / VIEWER_FILE
    assert found is not None, f"no step of {mode}'s smoke scenario wrote {VIEWER_FILE}"
    return found


def _wait(browser, script: str, seconds: float = 30):  # generous: CI runs two workers on two cores
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = browser.execute_script(script)
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"never true: {script}")


def _drawn(browser, part: str) -> None:
    """Wait until the hash holds `part` and the page has redrawn for it (the redraw follows the hash's change)."""
    _wait(browser, f"return location.hash.includes('{part}') && document.body.dataset.shown === location.hash")


def _open(browser, url: str) -> None:
    browser.get("about:blank")  # a hash-only change of the URL does not reload the page: start each view afresh
    browser.get(url)
    _wait(browser, "return document.body.dataset.ready === '1'")


def _rows(browser) -> list[str]:
    return browser.execute_script("return [...document.querySelectorAll('tr[data-sample]')]"
                                  ".map(r => r.dataset.sample)")


def _text(s: dict) -> str:
    """A sample's searchable text, as the page builds it."""
    return "\n".join([s["id"], s["item"], s["model"], s["title"], s["score"], *s["facets"].values(),
                      *(f"{p['label']} {p['text']}" for p in s["parts"])]).lower()


def _query_for(samples: list[dict]) -> tuple[dict, str]:
    """A sample whose item other models answered too, and a search for it: a word found only in that item's
    samples, and the sample's model."""
    items = Counter(s["item"] for s in samples)
    counts = Counter(w for item in items
                     for w in {w for s in samples if s["item"] == item for w in re.findall(r"[a-z0-9]{6,}", _text(s))})
    for target in samples:
        if items[target["item"]] < 2:
            continue
        own = sorted(w for w in re.findall(r"[a-z0-9]{6,}", _text(target)) if counts[w] == 1)
        if own:
            return target, f"{own[0]} {target['model']}"
    raise AssertionError("no item has a word of its own")


@pytest.mark.parametrize("mode", MODES)
def test_the_viewer_finds_filters_links_and_escapes(mode, harness, loopback, tmp_path, monkeypatch):
    viewer = _viewer_of(mode, tmp_path, loopback, monkeypatch)
    data = read_viewer(viewer)
    samples = data["samples"]
    assert len(samples) >= 2 and any(MARKUP in p["text"] for s in samples for p in s["parts"])
    url = viewer.resolve().as_uri()
    target, query = _query_for(samples)
    found = [s["id"] for s in samples if all(w in _text(s) for w in query.lower().split())]
    assert target["id"] in found and len(found) < len({s["item"] for s in samples})
    browser = headless_chromium("1400,900")
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        _open(browser, url)
        assert len(_rows(browser)) == min(len(samples), 50)  # the first page
        headers = browser.execute_script("return [...document.querySelectorAll('table.samples th')]"
                                         ".map(t => t.textContent)")
        assert headers[:3] == ["sample", "model", "score"] and len(headers) == len(set(headers))  # each column once
        search = browser.find_element("id", "search")
        search.send_keys(query + "\n")
        _drawn(browser, "q=")
        assert _rows(browser) == found

        # A filter narrows the list to its value.
        facet = next(k for k in target["facets"] if len({s["facets"].get(k) for s in samples}) > 1)
        value = target["facets"][facet]
        _open(browser, url)
        browser.execute_script("const s = document.querySelector(`select[data-facet='${arguments[0]}']`);"
                               "s.value = arguments[1]; s.dispatchEvent(new Event('change'));", facet, value)
        _drawn(browser, "f.")
        narrowed = _rows(browser)
        expected = [s["id"] for s in samples if s["facets"].get(facet) == value]
        assert narrowed == expected[:50] and len(expected) < len(samples)
        assert f"{len(expected)} of {len(samples)} samples" in browser.find_element("id", "count").text

        # A deep link opens the sample; model text with markup is shown as text and never runs.
        _open(browser, f"{url}#sample={target['id']}")
        shown = browser.find_element("css selector", "section.sample")
        assert shown.get_attribute("data-sample") == target["id"]
        assert target["title"] in shown.text
        meta = shown.find_element("css selector", ".meta").text
        assert meta.count(target["model"]) == 1 or target["model"] in target["title"]  # the model named once
        markup = next(s for s in samples if any(MARKUP in p["text"] for p in s["parts"]))
        _open(browser, f"{url}#sample={markup['id']}")
        page = browser.execute_script("return document.body.innerText")
        assert "<script>window.__pwned = 1</script>" in page
        assert browser.execute_script("return window.__pwned === undefined")
        assert not browser.execute_script("return document.querySelector('main img, main script')")
        browser.save_screenshot(str(SHOTS / f"viewer-{mode}.png"))

        # Replies given as a pair (two replies to one turn, as a judge compared them) sit side by side.
        paired = next((s for s in samples if any(p["kind"] == "pair" for p in s["parts"])), None)
        assert paired is not None or mode != "rpbench-auto"  # its battles: both replies of every round
        if paired is not None:
            _open(browser, f"{url}#sample={paired['id']}")
            boxes = browser.execute_script("return [...document.querySelector('main .pair').children]"
                                           ".map(b => [b.getBoundingClientRect().top, b.getBoundingClientRect().left,"
                                           " b.querySelector('.label').textContent])")
            first = [p["label"] for p in paired["parts"] if p["kind"] == "pair"][:2]
            assert [b[2] for b in boxes] == first and boxes[0][0] == boxes[1][0] and boxes[0][1] < boxes[1][1]

        # Every model's answer to one item, side by side.
        _open(browser, f"{url}#item={target['item']}")
        side = browser.execute_script("return [...document.querySelectorAll('#side-by-side section.sample')]"
                                      ".map(s => s.dataset.sample)")
        assert sorted(side) == sorted(s["id"] for s in samples if s["item"] == target["item"])
        browser.save_screenshot(str(SHOTS / f"viewer-{mode}-side-by-side.png"))
    finally:
        browser.quit()
    assert json.loads(json.dumps(data))["links"] == {"report": "report.html"}


def test_an_index_over_run_folders_shows_each_leaderboard_and_answers_side_by_side(harness, loopback, tmp_path,
                                                                                  monkeypatch):
    import shutil

    (tmp_path / "a").mkdir()
    first = _viewer_of("roleinteract", tmp_path / "a", loopback, monkeypatch).parent
    moved = tmp_path / "elsewhere" / "copy"  # a copied run folder works as well as the original
    shutil.copytree(first, moved)
    ran = rpbench("report", str(first), str(moved), "--out", str(tmp_path / "index"))
    assert ran.returncode == 0, ran.stderr
    index = (tmp_path / "index" / "index.html").read_text()
    assert index.count("roleinteract-player") == 2 and "report.html" in index
    merged = read_viewer(tmp_path / "index" / "samples.html")["samples"]
    single = read_viewer(first / VIEWER_FILE)["samples"]
    assert len(merged) == 2 * len(single)
    item = merged[0]["item"]
    same = sorted(s["model"] for s in merged if s["item"] == item)
    assert same == ["judge @ copy", "judge @ roleinteract", "roleinteract-player @ copy",
                    "roleinteract-player @ roleinteract"]
    browser = headless_chromium("1400,900")
    try:
        _open(browser, (tmp_path / "index" / "samples.html").as_uri() + f"#item={item}")
        side = browser.execute_script("return [...document.querySelectorAll('#side-by-side section.sample')]"
                                      ".map(s => s.getBoundingClientRect().left)")
        assert len(side) == 4 and len(set(side)) >= 2  # next to each other, not one below the other
        browser.get((tmp_path / "index" / "index.html").as_uri())
        links = browser.execute_script("return [...document.querySelectorAll('a')].map(a => a.href)")
        assert any(link.endswith("/elsewhere/copy/viewer.html") for link in links)
    finally:
        browser.quit()

    missing = rpbench("report", str(tmp_path / "nope"), "--out", str(tmp_path / "index"))
    assert missing.returncode == 2 and "nope: no such folder" in missing.stderr
    assert "Traceback" not in missing.stderr
    (tmp_path / "not-a-run").mkdir()
    empty = rpbench("report", str(tmp_path / "not-a-run"), "--out", str(tmp_path / "index"))
    assert empty.returncode == 2 and "not-a-run: not a run folder (no manifest.json in it)" in empty.stderr


def test_the_viewer_is_written_as_its_samples_come_and_a_repeated_id_leaves_the_old_page(tmp_path):
    """Samples may be made as the page is written (a generator, read once); a repeated id stops the write and
    the page already there stays whole."""
    from rpbench.tasks.reports.viewer import Part, Sample, read_viewer, write_viewer

    def made(ids):
        for i in ids:
            yield Sample(id=i, item=i, model="m", title=i, score="1", parts=[Part("Reply", f"<script>{i}")])

    page = write_viewer(tmp_path, "t", made(["a", "b", "c"]))
    assert [s["id"] for s in read_viewer(page)["samples"]] == ["a", "b", "c"]
    before = page.read_bytes()
    with pytest.raises(ValueError, match="two samples have the id 'b'"):
        write_viewer(tmp_path, "t", made(["a", "b", "b"]))
    assert page.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["viewer.html"]  # no half-written page left beside it


def test_a_sample_title_tells_items_apart_on_one_line():
    """A title is one line: an English text is cut at a space, a Chinese one (no spaces, two columns a
    character) at the width. A RoleInteract item is named by whom the model plays and the line it answers (its
    instruction is the same for a whole column), and one without a role says nothing of it."""
    from rpbench.samples import sample_path
    from rpbench.tasks.modes.roleinteract.loader import load_file
    from rpbench.tasks.modes.roleinteract.samples import _title
    from rpbench.tasks.reports.viewer import gist

    english = gist("word " * 40, 30)
    assert english == "word word word word word…"
    chinese = gist("疯了，那就更不能见孩子" * 10, 30)  # two columns a character
    assert len(chinese) == 15 and chinese.endswith("…")
    assert gist("a\n  short\ttext") == "a short text"
    items = load_file(sample_path("roleinteract", "example.json")).items
    played = next(i for i in items if i.target)
    assert _title(played).startswith(f"{played.item_id} as {played.target}: {played.dialogue[-1].speaker}: ")
    alone = next(i for i in items if not i.target)
    assert "role" not in _title(alone) and "\n" not in _title(alone)
