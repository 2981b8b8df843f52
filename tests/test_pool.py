"""The character-scene pool: ingest, chunking, boundaries, extraction, stitching, names, filters, `pool add`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm import NoReply, Reply
from rpbench.tasks.modes.furina.domain import Scene
from rpbench.tasks.modes.furina.pool.boundaries import apply_boundaries, locate
from rpbench.tasks.modes.furina.pool.build import PoolConfig, build_book
from rpbench.tasks.modes.furina.pool.chapters import find_headings
from rpbench.tasks.modes.furina.pool.chunking import ChunkingConfig, static_chunks
from rpbench.tasks.modes.furina.pool.custom import merge_scenes
from rpbench.tasks.modes.furina.pool.extract import stitch
from rpbench.tasks.modes.furina.pool.filters import FilterConfig
from rpbench.tasks.modes.furina.pool.ingest import clean_text, read_book
from rpbench.tasks.modes.furina.pool.models import AliasMap, BoundaryVerdict, ExtractedScene
from rpbench.tasks.modes.furina.pool.names import alias_mapping
from rpbench.tasks.modes.furina.scene_files import load_scene_file, read_scenes
from tests.helpers import rpbench

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "books"
SHARED = ROOT.parent / "shared" / "books"
EN_SAMPLE = SAMPLES / "the_keepers_ledger.en.txt"
ZH_SAMPLE = SAMPLES / "qingshi_lanterns.zh.txt"


# -- ingest ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "gb18030", "utf-16"])
def test_chinese_text_reads_the_same_in_any_common_encoding(tmp_path, encoding):
    original = read_book(ZH_SAMPLE)
    path = tmp_path / f"book.{encoding}.txt"
    path.write_bytes(ZH_SAMPLE.read_text(encoding="utf-8").replace("\n", "\r\n").encode(encoding))
    book = read_book(path)
    assert book.text == original.text and book.language == "zh"


def test_html_tags_and_entities_are_removed():
    assert clean_text("<p>他说：&quot;好！&quot;</p><p>走吧。</p>") == '他说："好！"\n\n走吧。\n'


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), (b"", "the file is empty"), (b"\x00\x01\x02binary" * 400, "binary"),
     (b"Chapter 1\n\nToo short.", "too short to hold a scene")],
)
def test_bad_books_get_a_one_line_error(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError, match=message) as err:
        read_book(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_cli_reports_a_bad_book_in_one_line_with_nonzero_exit(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    proc = rpbench("pool", "chunk", str(empty), "--out", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {empty}: the file is empty"
    assert "Traceback" not in proc.stdout + proc.stderr


# -- chapters and chunking -------------------------------------------------------------------------
def _check_chunks(book, cfg):
    spans = static_chunks(book.text, book.language, cfg)
    assert "".join(book.text[s.start : s.end] for s in spans) == book.text  # nothing lost or duplicated
    assert all(s.n_tokens <= cfg.max_tokens for s in spans)
    if len(spans) > 1:
        assert all(s.n_tokens >= cfg.min_tokens for s in spans)
    return spans


def test_project_samples_chunk_by_chapter():
    for path, n in ((EN_SAMPLE, 3), (ZH_SAMPLE, 3)):
        book = read_book(path)
        assert len(find_headings(book.text, book.language)) == n
        spans = _check_chunks(book, ChunkingConfig(target_tokens=600, min_tokens=300, max_tokens=1200))
        assert len(spans) >= 2


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/books is not present")
@pytest.mark.parametrize(
    ("name", "chapters"),
    [("alice_in_wonderland.en.txt", 12), ("pride_and_prejudice.en.txt", 61), ("journey_to_the_west.zh.txt", 100)],
)
def test_shared_books_chapter_counts_and_chunk_bounds(name, chapters):
    book = read_book(SHARED / name)
    assert len(find_headings(book.text, book.language)) == chapters
    _check_chunks(book, ChunkingConfig())


def test_few_headings_fall_back_to_windows():
    text = "\n\n".join(f"Paragraph {i}. " + "word " * 60 for i in range(200)) + "\n"
    spans = static_chunks(text, "en", ChunkingConfig(target_tokens=500, min_tokens=250, max_tokens=1000))
    assert len(spans) > 5 and "".join(text[s.start : s.end] for s in spans) == text


# -- boundaries -----------------------------------------------------------------------------------
def _ok(parsed) -> Reply:
    return Reply("extractor", "fake", "{}", parsed, 1, False)


def test_boundary_move_keeps_text_whole_and_snaps_to_line_start():
    text = "A" * 400 + "\nShe said hello.\nHe answered her kindly.\n" + "B" * 300
    spans = [(0, 440), (440, len(text))]
    verdict = BoundaryVerdict(reason="cut", unfinished=True, unfinished_starts_with="said hello")
    new, moves = apply_boundaries(text, spans, [_ok(verdict)])
    assert moves[0].status == "moved" and new[0][1] == text.index("She said")
    assert text[new[0][0] : new[0][1]] + text[new[1][0] : new[1][1]] == text


def test_boundary_verdicts_that_cannot_apply_are_recorded():
    text = "x" * 1000 + "\n" + "y" * 1000
    spans = [(0, 1001), (1001, 2001)]
    failed = NoReply("extractor", "fake", None, "bad", 1)
    nowhere = _ok(BoundaryVerdict(reason="", unfinished=True, unfinished_starts_with="words not in the text"))
    fine = _ok(BoundaryVerdict(reason="", unfinished=False))
    assert [apply_boundaries(text, spans, [v])[1][0].status for v in (failed, nowhere, fine)] == [
        "failed", "not_found", "kept"]


def test_locate_tolerates_small_copy_errors():
    text = "It was late. The keeper lit the great lamp at dusk and waited."
    assert locate(text, "The keeper lit the grate lamp", 0, len(text)) == text.index("The keeper")


# -- extraction, stitching, names --------------------------------------------------------------------
def scene(summary, speakers, state="finished", n=4):
    return ExtractedScene(
        summary=summary, state=state,
        characters=[{"name": s, "description": "d"} for s in dict.fromkeys(speakers)],
        dialogue=[{"speaker": speakers[i % len(speakers)], "text": f"{summary} line {i}"} for i in range(n)],
    )


def test_stitching_joins_a_truncated_scene_to_its_continuation():
    a = scene("Maren and Tobias watch the dark ship", ["Maren", "Tobias"], "truncated", 3)
    b_other = scene("The village market opens", ["Grocer", "Child"])
    b_cont = scene("Maren and Tobias keep watching the dark ship", ["Maren", "Tobias"], "finished", 2)
    out = stitch("b", [[a], [b_other, b_cont]])
    joined = [s for s in out if s.stitched]
    assert len(joined) == 1 and joined[0].chunk_indices == [0, 1] and len(joined[0].dialogue) == 5
    assert len(out) == 2


def test_an_unmatched_truncated_scene_is_kept_with_a_note():
    a = scene("A storm at sea", ["Ahab", "Starbuck"], "truncated")
    b = scene("Tea in the garden", ["Alice", "Hatter"])
    out = stitch("b", [[a], [b]])
    assert len(out) == 2 and out[0].notes == ["continuation not found in the next chunk"]


def test_alias_mapping_ignores_invented_names():
    groups = AliasMap(groups=[{"canonical": "Maren Holt", "aliases": ["Maren", "Miss Holt", "The Keeper"]}])
    mapping, ignored = alias_mapping(groups, {"Maren", "Miss Holt", "Maren Holt"})
    assert mapping == {"Maren": "Maren Holt", "Miss Holt": "Maren Holt"} and ignored == ["The Keeper"]


# -- the whole book pipeline with a scripted LLM ----------------------------------------------------
class ScriptedGateway:
    """Answers each request kind with a fixed object, records the tags it saw."""

    def __init__(self, extractions, aliases, fragment_fail=()):
        self.extractions, self.aliases, self.fragment_fail = extractions, aliases, set(fragment_fail)
        self.tags: list[str] = []

    async def run(self, req):
        self.tags.append(req.tag)
        kind = req.tag.split(":")[0]
        if kind == "boundary":
            return _ok(BoundaryVerdict(reason="", unfinished=False))
        if kind == "extract":
            return _ok(self.extractions[int(req.tag.rsplit(":", 1)[1])])
        if kind == "aliases":
            return _ok(self.aliases)
        index = int(req.tag.rsplit(":", 1)[1])
        if index in self.fragment_fail:
            return NoReply("extractor", "fake", "nonsense", "no JSON", 3)
        names = [n.strip("- ") for n in req.messages[0]["content"].split("one entry for each of these characters: ")[1]
                 .split(".")[0].split(", ")]
        sketch = {k: "" for k in ("nickname", "gender", "age", "appearance", "persona", "relationships", "hobbies",
                                  "background_public", "background_private")}
        from rpbench.tasks.modes.furina.pool.models import Fragment

        return _ok(Fragment(world="A rocky coast.", situation="Night.", characters=[
            {"name": n, **sketch, "speech_pattern": "terse", "persona": "brave", "motivation": "I want the truth."}
            for n in names]))

    async def run_all(self, requests, on_done=None):
        return [await self.run(r) for r in requests]


async def test_build_book_end_to_end_with_scripted_llm():
    book = read_book(EN_SAMPLE)
    cfg = PoolConfig(ChunkingConfig(600, 300, 1200), FilterConfig(min_utterances=4, min_speakers=2))
    n_chunks = len(static_chunks(book.text, "en", cfg.chunking))
    extractions = [
        {"scenes": [scene("Maren and Tobias see the unlit ship", ["Maren", "Tobias"], "truncated").model_dump()]},
        {"scenes": [scene("Maren and Tobias watch the unlit ship with Fen", ["Miss Holt", "Tobias", "Fen"]).model_dump(),
                    scene("Fen mends a net alone", ["Fen"]).model_dump(),
                    scene("Captain Varga asks for the ledger", ["Isolde", "Maren"]).model_dump()]},
    ] + [{"scenes": []}] * (n_chunks - 2)
    from rpbench.tasks.modes.furina.pool.models import ChunkExtraction

    gateway = ScriptedGateway([ChunkExtraction.model_validate(e) for e in extractions],
                              AliasMap(groups=[{"canonical": "Maren Holt", "aliases": ["Maren", "Miss Holt"]}]),
                              fragment_fail={1})
    result = await build_book(gateway, book, cfg)
    assert [c.boundary for c in result.chunks][-1] == "last"
    assert len(result.scenes) == 1  # stitched scene kept; the captain's scene failed assembly
    kept = result.scenes[0]
    assert kept.chunk_indices == [0, 1]
    assert {c.name for c in kept.characters} == {"Maren Holt", "Tobias", "Fen"}
    assert all(ln.speaker != "Maren" and ln.speaker != "Miss Holt" for ln in kept.original_dialogue)
    private = {a.key for c in kept.characters for a in c.profile if a.visibility == "private"}
    assert private == {"speech_pattern"}  # the only private-by-default attribute that was filled in
    reasons = sorted(d.reason for d in result.dropped)
    assert reasons == ["fragment call failed: no JSON", "only 1 speaker(s) (minimum 2)"]
    assert result.failures["fragment"] == 1


# -- pool add ---------------------------------------------------------------------------------------
CUSTOM = {
    "scene_id": "custom-1", "book_id": "my-world", "language": "en", "summary": "A duel at dawn.",
    "background": "A city of canals.", "situation": "Dawn on the bridge.",
    "original_dialogue": [{"speaker": "Ana", "text": "You came."}, {"speaker": "Bo", "text": "I always do."}],
    "characters": [
        {"name": "Ana", "motivation": "I want an apology.",
         "profile": [{"key": "name", "value": "Ana", "visibility": "public"}]},
        {"name": "Bo", "motivation": "I want to win.",
         "profile": [{"key": "hobbies", "value": "fencing", "visibility": "private"}]},
    ],
}


def test_pool_add_validates_and_appends(tmp_path):
    path = tmp_path / "scenes.json"
    path.write_text(json.dumps([CUSTOM]))
    pool = tmp_path / "pool"
    pool.mkdir()
    # A folder without a pool is a mistake (a typo) unless --new says to start one there.
    proc = rpbench("pool", "add", str(path), "--pool", str(pool))
    assert proc.returncode == 2 and "holds no scenes.parquet" in proc.stderr and not (pool / "scenes.parquet").exists()
    proc = rpbench("pool", "add", str(path), "--pool", str(pool), "--new")
    assert proc.returncode == 0, proc.stderr
    scenes = read_scenes(pool / "scenes.parquet")
    assert [s.scene_id for s in scenes] == ["custom-1"] and scenes[0].source == "custom"
    # The same file again changes nothing; a different scene under a taken id is an error.
    proc = rpbench("pool", "add", str(path), "--pool", str(pool))
    assert proc.returncode == 0 and "added 0 scene(s)" in proc.stdout and "1 already there, unchanged" in proc.stdout
    path.write_text(json.dumps([{**CUSTOM, "summary": "Another duel."}]))
    proc = rpbench("pool", "add", str(path), "--pool", str(pool))
    assert proc.returncode == 2 and "already in the pool, with other content" in proc.stderr


@pytest.mark.parametrize(
    ("change", "field"),
    [({"language": "fr"}, "language"), ({"original_dialogue": []}, "original_dialogue"),
     ({"characters": [{**CUSTOM["characters"][0], "profile": [
         {"key": "age", "value": "9", "visibility": "public"}, {"key": "age", "value": "10", "visibility": "public"}]}]},
      "characters.0.profile"),
     ({"characters": [{**CUSTOM["characters"][0], "profile": [{"key": "age", "value": "9", "visibility": "hidden"}]}]},
      "characters.0.profile.0.visibility")],
)
def test_pool_add_errors_name_file_record_and_field(tmp_path, change, field):
    path = tmp_path / "scenes.yaml"
    import yaml

    path.write_text(yaml.safe_dump([{**CUSTOM, **change}]))
    with pytest.raises(InputError, match=rf"scenes.yaml: record 0 \(custom-1\): field '{field}'"):
        load_scene_file(path)


def test_merge_refuses_a_taken_id_with_other_content_and_skips_an_identical_scene():
    s = Scene.model_validate(CUSTOM)
    assert merge_scenes([s], [s], "f.json") == [s]
    with pytest.raises(InputError, match="already in the pool, with other content"):
        merge_scenes([s], [s.model_copy(update={"summary": "changed"})], "f.json")


def test_epub_books_are_read(tmp_path):
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("rpbench-test")
    book.set_title("The Keeper's Ledger")
    book.set_language("en")
    chapters = []
    for k, part in enumerate(EN_SAMPLE.read_text(encoding="utf-8").split("\nChapter ")[1:], 1):
        c = epub.EpubHtml(title=f"Chapter {k}", file_name=f"c{k}.xhtml", lang="en")
        paragraphs = "".join(f"<p>{p}</p>" for p in ("Chapter " + part).split("\n\n"))
        c.content = f"<html><body>{paragraphs}</body></html>"
        book.add_item(c)
        chapters.append(c)
    book.spine = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    path = tmp_path / "ledger.epub"
    epub.write_epub(str(path), book)
    parsed = read_book(path)
    assert parsed.encoding == "epub" and parsed.language == "en"
    assert "Maren Holt" in parsed.text and "<p>" not in parsed.text
    assert len(find_headings(parsed.text, "en")) == 3


def test_undecodable_bytes_are_refused_in_one_line(tmp_path):
    import random

    rng = random.Random(0)
    path = tmp_path / "noise.txt"
    path.write_bytes(bytes(rng.choice(range(0x80, 0x100)) for _ in range(5000)))  # no NUL, not text in any encoding
    with pytest.raises(InputError) as err:
        read_book(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert "undecodable" in message or "binary" in message or "encoding" in message
