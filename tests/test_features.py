"""Windows and targets: every label maps back to the exact answer characters."""

import json
import os

import numpy as np
import torch
import pytest

from bio_mrc.errors import ConfigError
from bio_mrc.features.targets import MISSING_ANNOTATOR
from bio_mrc.features.windows import FeatureConfig, build_features, check_tokenizer, tokenize_windows, truncate_questions
from bio_mrc.features.collate import WindowCollator
from bio_mrc.tags import TAG_B, TAG_I, TAG_O
from bio_mrc.types import Example

from .conftest import TOKENIZER_FAMILIES

SMALL = FeatureConfig(max_seq_length=40, doc_stride=12, max_query_length=10, tag_level="subword")


def rows(features):
    return [features[i] for i in range(len(features))]


def test_span_targets_map_back_to_answer_text(sample_v1, tiny_tokenizer):
    windows = FeatureConfig(SMALL.max_seq_length, SMALL.doc_stride, SMALL.max_query_length, "one-hot", "one-hot", "subword")
    features = build_features(sample_v1.examples, tiny_tokenizer, windows)
    assert len(features) > len(sample_v1.examples)  # long contexts span several windows
    seen_answer = set()
    for row in rows(features):
        example = sample_v1.examples[row["example_index"]]
        start, end = row["start_positions"], row["end_positions"]
        if start == 0:
            assert end == 0
            continue
        offsets = row["offset_mapping"]
        s, e = example.answers[0][0]
        assert example.context[offsets[start][0]: offsets[end][1]] == example.context[s:e]
        seen_answer.add(example.id)
    assert seen_answer == {ex.id for ex in sample_v1.examples}


@pytest.mark.parametrize("tag_level", ["word", "subword"])
@pytest.mark.parametrize("family", TOKENIZER_FAMILIES)
def test_a_gold_span_with_whitespace_at_its_edges_trains_on_its_words(family, tag_level, request):
    # "france\n" ends past the window's last token and " normans" begins before its first: each window
    # holds the words, so the span head learns them there (it learned [CLS] in every window). The tagger
    # tags the words alone: a token of the spaces beside them (SentencePiece's "▁", GPT-2's "Ġ") is O (it was I).
    tokenizer = request.getfixturevalue(family)
    context = " normans  came  from france\n"
    golds = {"start": ((0, 8), "normans"), "middle": ((8, 16), "came"), "end": ((20, 28), "france")}
    examples = [Example(name, "where from ?", context, ((span,),)) for name, (span, _) in golds.items()]
    config = FeatureConfig(64, 16, 16, "one-hot", "one-hot", tag_level)
    learned, tagged = {}, {}
    for row in rows(build_features(examples, tokenizer, config)):
        offsets, name = row["offset_mapping"], examples[row["example_index"]].id
        learned[name] = context[offsets[row["start_positions"]][0]:offsets[row["end_positions"]][1]].strip()
        tags = np.asarray(row["bio_targets"]).argmax(-1)
        units = [(a, b) for (a, b), tag, kept in zip(row["word_offsets"], tags, row["tag_mask"]) if kept and tag != TAG_O]
        tagged[name] = context[min(a for a, _ in units):max(b for _, b in units)].strip(), [
            context[a:b] for a, b in units if not context[a:b].strip()]
    assert learned == {name: word for name, (_, word) in golds.items()}
    assert {name: (word, []) for name, word in learned.items()} == tagged


def test_a_gold_span_with_zero_width_spaces_at_its_edges_trains_on_its_word(metaspace_tokenizer):
    # SentencePiece makes each zero-width space of "\u200bfrance\u200b" a token of its own, which no decoder answers:
    # both heads learn "france" alone (the tagger's B was on the first "\u200b", the span head started there).
    context = "the normans came from \u200bfrance\u200b ."
    example = Example("q", "where from ?", context, (((22, 30),),))
    assert context[22:30] == "\u200bfrance\u200b"
    row = build_features([example], metaspace_tokenizer, FeatureConfig(64, 16, 16, "one-hot", "one-hot", "subword"))[0]
    offsets = row["offset_mapping"]
    assert context[offsets[row["start_positions"]][0]:offsets[row["end_positions"]][1]] == "france"
    tags = np.asarray(row["bio_targets"]).argmax(-1)
    tagged = [(context[a:b], int(tag)) for (a, b), tag, kept in zip(row["word_offsets"], tags, row["tag_mask"])
              if kept and a >= 21]
    assert tagged == [(" ", TAG_O), ("\u200b", TAG_O), ("f", TAG_B), ("ra", TAG_I), ("n", TAG_I), ("ce", TAG_I),
                      ("\u200b", TAG_O), (" ", TAG_O), (".", TAG_O)]


def test_bio_one_hot_tags_cover_answer_tokens(sample_v1, tiny_tokenizer):
    config = FeatureConfig(64, 16, 16, "one-hot", "one-hot", "subword")
    windows = rows(build_features(sample_v1.examples, tiny_tokenizer, config))
    assert len(windows) >= len(sample_v1.examples)
    assert any(row["start_positions"] > 0 for row in windows)  # the answer's tags below are checked
    for row in windows:
        targets = np.asarray(row["bio_targets"])
        mask = np.asarray(row["paragraph_mask"], bool)
        assert np.all(targets[~mask] == 0)  # question, special and padding tokens carry nothing
        assert np.allclose(targets[mask].sum(-1), 1)
        tags = targets.argmax(-1)
        if row["start_positions"] > 0:
            s, e = row["start_positions"], row["end_positions"]
            assert tags[s] == TAG_B and np.all(tags[s + 1 : e + 1] == TAG_I)
            assert np.sum(tags[mask] != TAG_O) == e - s + 1


def test_soft_bio_targets_average_annotators(tiny_tokenizer):
    context = "the normans came from normandy in france ."
    # Three annotators: "normandy in france" (B I I), "france" (B) and "normandy" (B).
    example = Example("x", "where from ?", context, (((22, 40),), ((34, 40),), ((22, 30),)))
    row = build_features([example], tiny_tokenizer, FeatureConfig(64, 16, 16, "soft", "one-hot", "subword"))[0]
    offsets = np.asarray(row["offset_mapping"])
    targets = np.asarray(row["bio_targets"])
    by_word = {context[s:e]: targets[i] for i, (s, e) in enumerate(offsets) if s >= 0}
    np.testing.assert_allclose(by_word["normandy"], [2 / 3, 0, 1 / 3], atol=1e-6)
    np.testing.assert_allclose(by_word["in"], [0, 1 / 3, 2 / 3], atol=1e-6)
    np.testing.assert_allclose(by_word["france"], [1 / 3, 1 / 3, 1 / 3], atol=1e-6)
    np.testing.assert_allclose(by_word["from"], [0, 0, 1], atol=1e-6)


def test_every_mention_targets_tag_each_mention_of_the_answer_text(tiny_tokenizer):
    context = "ann met bob . later bob met bobby and bob ."
    example = Example("x", "who ?", context, (((8, 11),),))
    tagged = {}
    for mentions in ("annotated", "every"):
        config = FeatureConfig(64, 16, 16, "one-hot", "one-hot", "subword", tag_mentions=mentions)
        row = build_features([example], tiny_tokenizer, config)[0]
        offsets, tags = np.asarray(row["offset_mapping"]), np.asarray(row["bio_targets"]).argmax(-1)
        mask = np.asarray(row["paragraph_mask"], bool)
        tagged[mentions] = [int(offsets[i][0]) for i in np.flatnonzero(mask & (tags == TAG_B))]  # where each B starts
        assert context[offsets[row["start_positions"]][0]:offsets[row["end_positions"]][1]] == "bob"
        assert offsets[row["start_positions"]][0] == 8  # the span head learns the annotated mention alone
    assert tagged["annotated"] == [8]
    assert tagged["every"] == [8, 20, 38]  # not "bobby" at 28


def test_ignored_mentions_carry_no_loss_and_the_rest_keeps_its_tags(tiny_tokenizer):
    context = "ann met bob . later bob met bobby and bob ."
    example = Example("x", "who ?", context, (((8, 11),),))
    config = FeatureConfig(64, 16, 16, "soft", "one-hot", "subword", tag_mentions="ignored")
    row = build_features([example], tiny_tokenizer, config)[0]
    offsets, targets = np.asarray(row["offset_mapping"]), np.asarray(row["bio_targets"])
    mask = np.asarray(row["paragraph_mask"], bool)
    unscored = mask & (targets.sum(-1) == 0)
    starts = {int(offsets[i][0]) for i in np.flatnonzero(unscored)}
    assert {20, 38} <= starts and all(20 <= start < 23 or 38 <= start < 41 for start in starts)  # the other two "bob"s
    tags = targets[mask & ~unscored].argmax(-1)
    assert (tags == TAG_B).sum() == 1 and (targets[mask & ~unscored].sum(-1) == 1).all()


def test_a_windows_tags_look_at_the_mentions_near_it_alone(tiny_tokenizer, monkeypatch):
    # 300 mentions of "bob" over 100 windows: each window's tags looked at all 300 (windows times mentions, hours
    # for a text repeated in a 5,000,000-character context); a window reads the few that may meet its words.
    from bio_mrc.features import targets

    seen, spans_to_tags = [], targets.spans_to_tags
    monkeypatch.setattr(targets, "spans_to_tags", lambda words, tagged, spans: seen.append(len(spans)) or spans_to_tags(words, tagged, spans))
    context = "bob met ann . " * 300
    example = Example("x", "who ?", context, (((0, 3),),))
    for mentions in ("every", "ignored"):
        config = FeatureConfig(40, 12, 10, "one-hot", "one-hot", "subword", tag_mentions=mentions)
        features = targets.add_targets(tokenize_windows([example], tiny_tokenizer, config), [example], config, ["bio"])
        tags = [np.where(np.asarray(t).sum(-1) > 0, np.asarray(t).argmax(-1), TAG_O) for t in features["bio_targets"]]
        starts = {int(o[0]) for row, t in zip(features["offset_mapping"], tags) for o in np.asarray(row)[t == TAG_B]}
        assert starts == ({14 * i for i in range(300)} if mentions == "every" else {0})
    assert len(seen) > 150 and max(seen) <= 10


def test_ignored_mentions_need_a_tag_distribution():
    with pytest.raises(ConfigError, match="ignored"):
        FeatureConfig(bio_targets="marginal", tag_mentions="ignored")


def test_each_kind_of_bio_targets_says_whether_it_is_a_tag_distribution():
    from bio_mrc.features.config import BIO_TARGET_KINDS, BIO_TARGETS
    from bio_mrc.training.train import BIO_ONLY_CLASS_WEIGHTS, TrainConfig

    assert BIO_TARGET_KINDS == tuple(BIO_TARGETS) == ("one-hot", "soft", "marginal")
    assert [kind for kind, entry in BIO_TARGETS.items() if entry.tag_distribution] == ["one-hot", "soft"]
    for kind, entry in BIO_TARGETS.items():  # leaving mentions out and class weights: a distribution's alone
        assert TrainConfig(heads="bio", bio_targets=kind).resolved_bio_class_weights == (
            BIO_ONLY_CLASS_WEIGHTS if entry.tag_distribution else None), kind
        if entry.tag_distribution:
            assert FeatureConfig(bio_targets=kind, tag_mentions="ignored").bio_targets == kind
        else:
            with pytest.raises(ConfigError, match=r"^tag_mentions 'ignored' leaves tokens out of a tag distribution: "
                                                  r"it needs bio_targets 'soft' or 'one-hot'$"):
                FeatureConfig(bio_targets=kind, tag_mentions="ignored")


def test_marginal_targets_keep_every_annotator_and_collate(tiny_tokenizer):
    context = "the normans came from normandy in france ."
    two = Example("x", "where from ?", context, (((22, 40),), ((34, 40),)))
    one = Example("y", "who ?", context, (((4, 11),),))
    features = build_features([two, one], tiny_tokenizer, FeatureConfig(64, 16, 16, "marginal", "one-hot", "word"))
    rows_ = list(features)
    words = {context[s:e]: i for i, (s, e) in enumerate(rows_[0]["offset_mapping"]) if s >= 0}
    tags = np.asarray(rows_[0]["bio_targets"])  # (L, K): one column per annotator
    assert tags.shape[1] == 2
    assert tags[words["normandy"]].tolist() == [TAG_B, TAG_O] and tags[words["france"]].tolist() == [TAG_I, TAG_B]
    batch = WindowCollator()(rows_)
    assert batch["bio_targets"].shape[2] == 2 and batch["bio_targets"].dtype == torch.long
    assert (batch["bio_targets"][1, :, 1] == MISSING_ANNOTATOR).all()  # the one-annotator window is padded
    assert batch["tag_mask"].shape == batch["input_ids"].shape


def test_soft_span_targets_are_distributions(sample_v1, tiny_tokenizer):
    config = FeatureConfig(64, 16, 16, "soft", "soft", "subword")
    windows = rows(build_features(sample_v1.examples, tiny_tokenizer, config))
    assert len(windows) >= len(sample_v1.examples)
    for row in windows:
        for key in ("start_positions", "end_positions"):
            assert sum(row[key]) == pytest.approx(1.0)


def test_unanswerable_windows_get_cls_and_all_o(tiny_tokenizer):
    example = Example("u", "who?", "nobody knows the answer here .", ())
    row = build_features([example], tiny_tokenizer, SMALL)[0]
    assert row["start_positions"] == row["end_positions"] == 0
    mask = np.asarray(row["paragraph_mask"], bool)
    assert np.all(np.asarray(row["bio_targets"])[mask].argmax(-1) == TAG_O)


def test_answer_split_across_windows_starts_with_i_in_the_later_window(tiny_tokenizer):
    words = "zero one two three four five six seven eight nine".split() * 3
    context = " ".join(words)
    start = context.index("seven eight nine zero one")
    example = Example("w", "which?", context, (((start, start + len("seven eight nine zero one")),),))
    features = rows(build_features([example], tiny_tokenizer, FeatureConfig(16, 4, 4, "one-hot", "one-hot", "subword")))
    tag_runs = [np.asarray(r["bio_targets"]).argmax(-1)[np.asarray(r["paragraph_mask"], bool)] for r in features]
    # Some window holds the start (B) and some later window only the tail (I without B).
    assert any(TAG_B in t for t in tag_runs)
    assert any(TAG_I in t and TAG_B not in t for t in tag_runs)
    assert all(r["start_positions"] == 0 for r, t in zip(features, tag_runs) if TAG_B not in t)


def test_question_truncation_keeps_a_character_prefix(tiny_tokenizer):
    question = "isaac newton formulated the laws of motion and universal gravitation"
    (cut,) = truncate_questions([question], tiny_tokenizer, 3)
    assert cut == "isaac newton formulated"
    assert truncate_questions(["who?"], tiny_tokenizer, 3) == ["who?"]


def test_a_tokenizer_without_offsets_is_refused(tiny_encoder_dir):
    class SlowTokenizer:
        is_fast = False

    with pytest.raises(TypeError, match="not a fast tokenizer"):
        check_tokenizer(SlowTokenizer())


def test_stride_that_cannot_advance_is_refused():
    with pytest.raises(ValueError, match="doc_stride"):
        FeatureConfig(max_seq_length=64, doc_stride=60, max_query_length=16)


def test_windows_are_cached_by_content_and_read_back(sample_v1, tiny_tokenizer, tmp_path):
    from bio_mrc.features.windows import windows_fingerprint

    first = build_features(sample_v1.examples, tiny_tokenizer, SMALL, cache_dir=tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [f"windows-{windows_fingerprint(sample_v1.examples, tiny_tokenizer, SMALL, True)}.arrow"]
    again = build_features(sample_v1.examples, tiny_tokenizer, SMALL, cache_dir=tmp_path)
    assert [f["filename"] for f in again.cache_files] == [str(tmp_path / files[0])]  # memory-mapped, not rebuilt
    assert again.to_dict() == first.to_dict()
    assert sorted(p.name for p in tmp_path.iterdir()) == files

    # Anything the windows depend on gives another file: settings, targets, the questions themselves.
    changed = [
        (sample_v1.examples, FeatureConfig(SMALL.max_seq_length, SMALL.doc_stride + 1, SMALL.max_query_length, tag_level="subword"), True),
        (sample_v1.examples, SMALL, False),
        (sample_v1.examples[:-1], SMALL, True),
    ]
    keys = {windows_fingerprint(examples, tiny_tokenizer, config, targets) for examples, config, targets in changed}
    assert len(keys) == 3 and files[0][len("windows-"):-len(".arrow")] not in keys


def test_an_unreadable_windows_file_is_built_again_and_a_folder_in_its_place_is_one_line(sample_v1, tiny_tokenizer, tmp_path):
    """A windows file cut short (a full disk, a copy interrupted) or overwritten is built again, never a pyarrow
    traceback; a folder under its name is refused naming it."""
    from pathlib import Path

    from datasets import Dataset

    expected = build_features(sample_v1.examples, tiny_tokenizer, SMALL).to_dict()
    build_features(sample_v1.examples, tiny_tokenizer, SMALL, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("windows-*.arrow")
    whole = cached.read_bytes()
    # An Arrow stream cut between two batches reads as fewer windows, no error: one without the last question, one
    # without the last question's last window.
    fewer = build_features(sample_v1.examples[:-1], tiny_tokenizer, SMALL, cache_dir=tmp_path / "fewer").cache_files[0]["filename"]
    short = Dataset.from_dict(expected).select(range(len(expected["input_ids"]) - 1))
    short.flatten_indices(cache_file_name=str(tmp_path / "short.arrow"))
    for broken in (whole[: len(whole) // 2], b"garbage\n", Path(fewer).read_bytes(), (tmp_path / "short.arrow").read_bytes()):
        cached.unlink()  # a new file: the one built before stays memory-mapped as it was
        cached.write_bytes(broken)
        again = build_features(sample_v1.examples, tiny_tokenizer, SMALL, cache_dir=tmp_path)
        assert again.to_dict() == expected and len(cached.read_bytes()) == len(whole)
    cached.unlink()
    cached.mkdir()
    with pytest.raises(ConfigError, match=rf"{cached.name} is not a file, yet training caches its windows there"):
        build_features(sample_v1.examples, tiny_tokenizer, SMALL, cache_dir=tmp_path)


def test_a_windows_file_whose_feature_types_this_datasets_cannot_read_is_built_again(sample_v1, tiny_tokenizer, tmp_path, monkeypatch):
    """The cache is shared by every environment: a file a newer datasets wrote names feature types (``List``) that
    an older one's ``Dataset.from_file`` fails on with a TypeError; it is built again, never a traceback."""
    import datasets

    expected = build_features(sample_v1.examples, tiny_tokenizer, SMALL).to_dict()
    build_features(sample_v1.examples, tiny_tokenizer, SMALL, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("windows-*.arrow")
    size = cached.stat().st_size
    read, refused = datasets.Dataset.from_file, []

    def older_datasets(filename, *args, **kwargs):
        if filename == str(cached) and not refused:  # the file as found; the one built again reads
            refused.append(filename)
            raise TypeError("must be called with a dataclass type or instance")  # datasets 2.19 on a 4.x file
        return read(filename, *args, **kwargs)

    monkeypatch.setattr(datasets.Dataset, "from_file", older_datasets)
    cached.unlink()
    cached.write_bytes(b"\0" * size)  # proof that it is written anew
    again = build_features(sample_v1.examples, tiny_tokenizer, SMALL, cache_dir=tmp_path)
    assert refused and again.to_dict() == expected and cached.read_bytes() != b"\0" * size


def test_no_default_cache_when_datasets_caching_is_off():
    import datasets
    from bio_mrc.features.windows_cache import default_windows_cache

    assert default_windows_cache() is not None
    datasets.disable_caching()
    try:
        assert default_windows_cache() is None
    finally:
        datasets.enable_caching()


def _windows_file(folder, digit, size, mtime):
    path = folder / f"windows-{digit * 20}.arrow"
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime, mtime))
    return path


def test_the_windows_cache_removes_the_least_recently_used_files_past_its_budget(tmp_path):
    from bio_mrc.features.windows_cache import mark_used_and_prune

    oldest, older, recent = (_windows_file(tmp_path, d, 100, t) for d, t in (("a", 1000), ("b", 2000), ("c", 3000)))
    used = _windows_file(tmp_path, "d", 100, 500)  # read again now, though written first
    stranger = tmp_path / "windows-notes.arrow"  # not a windows file's name: never removed
    stranger.write_bytes(b"y" * 1000)

    assert mark_used_and_prune(used, budget_bytes=250) == [oldest, older]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([recent.name, used.name, stranger.name])
    assert used.stat().st_mtime > 3000
    assert mark_used_and_prune(recent, budget_bytes=0) == [used]  # 0 keeps only the windows last used
    assert mark_used_and_prune(recent, budget_bytes=0) == []


def test_the_windows_cache_removes_a_killed_runs_temporary_file_once_a_day_old(tmp_path):
    import os
    import time

    from bio_mrc.features.windows_cache import STALE_TEMPORARY_SECONDS, mark_used_and_prune

    used = _windows_file(tmp_path, "a", 100, time.time())
    left, writing, stranger = tmp_path / "tmpk3j_9zq1", tmp_path / "tmpab12cd34", tmp_path / "tmp-notes"
    for path in (left, writing, stranger):
        path.write_bytes(b"x" * 10)
    day_and_a_minute_ago = time.time() - STALE_TEMPORARY_SECONDS - 60
    for path in (left, stranger):
        os.utime(path, (day_and_a_minute_ago, day_and_a_minute_ago))
    assert mark_used_and_prune(used, budget_bytes=10**9) == [left]  # another run's file in progress and a stranger stay
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([used.name, writing.name, stranger.name])


def test_the_windows_cache_budget_is_read_from_the_environment(monkeypatch):
    from bio_mrc.features.windows_cache import BUDGET_VARIABLE, cache_budget_bytes

    monkeypatch.delenv(BUDGET_VARIABLE, raising=False)
    assert cache_budget_bytes() == 10_000_000_000
    monkeypatch.setenv(BUDGET_VARIABLE, "0.5")
    assert cache_budget_bytes() == 500_000_000
    for bad in ("-1", "lots", "nan", "inf", "1e300"):  # 1e300 GB overflowed to infinity bytes: OverflowError
        monkeypatch.setenv(BUDGET_VARIABLE, bad)
        with pytest.raises(ConfigError, match=f"{BUDGET_VARIABLE}='{bad}': give the windows cache's size"):
            cache_budget_bytes()


def test_building_windows_into_the_cache_prunes_older_ones(sample_v1, tiny_tokenizer, tmp_path, monkeypatch):
    from bio_mrc.features.windows_cache import BUDGET_VARIABLE

    stale = _windows_file(tmp_path, "e", 10, 1000)
    monkeypatch.setenv(BUDGET_VARIABLE, "0")
    build_features(sample_v1.examples, tiny_tokenizer, SMALL, cache_dir=tmp_path)
    assert not stale.exists() and len(list(tmp_path.glob("windows-*.arrow"))) == 1


@pytest.mark.parametrize("settings, match", [
    (dict(max_query_length=0), "max_query_length must be an integer of at least 1, got 0"),  # the question dropped
    (dict(max_query_length=-3), "max_query_length must be an integer of at least 1, got -3"),  # cut to its third-last token
    (dict(doc_stride=-1), "doc_stride must be an integer of at least 0, got -1"),  # the tokenizer's OverflowError
    (dict(max_seq_length=40.5), "max_seq_length must be an integer of at least 1, got 40.5"),
])
def test_window_settings_out_of_range_are_refused_when_the_config_is_made(settings, match):
    with pytest.raises(ConfigError, match=match):
        FeatureConfig(**{"max_seq_length": 40, "doc_stride": 8, "max_query_length": 12, **settings})


def test_windows_without_overlap_are_made(tiny_tokenizer):
    context = " ".join(["the normans were in normandy"] * 20)
    features = build_features([Example("q", "where?", context, None)], tiny_tokenizer,
                              FeatureConfig(max_seq_length=24, doc_stride=0, max_query_length=4), with_targets=False)
    spans = [np.asarray(offsets)[np.asarray(mask, dtype=bool)] for offsets, mask in zip(features["offset_mapping"], features["paragraph_mask"])]
    assert len(spans) > 2 and all(a[-1, 1] <= b[0, 0] for a, b in zip(spans, spans[1:]))  # each token in one window
    assert spans[0][0, 0] == 0 and spans[-1][-1, 1] == len(context)


WORDS = np.array([[0, 4], [5, 8], [9, 13], [14, 18], [19, 21]])  # "jack and jill went up"


@pytest.mark.parametrize("spans, expected", [
    ([(0, 13), (9, 13)], "BIIOO"),  # a part nested at the end of another: one span, the outer
    ([(9, 13), (0, 13)], "BIIOO"),  # whichever is listed first
    ([(0, 8), (5, 13)], "BIIOO"),  # two that share a word: one span of their union
    ([(0, 4), (0, 13)], "BIIOO"),  # nested at the start
    ([(0, 4), (5, 8)], "BBOOO"),  # adjacent: two spans
    ([(0, 4), (4, 8)], "BBOOO"),  # one ends where the next begins: still two
    ([(0, 4), (0, 4)], "BOOOO"),  # a repeated span is one
    ([(0, 21)], "BIIII"),  # the whole context
    ([(0, 4), (14, 21), (15, 18)], "BOOBI"),
])
def test_overlapping_spans_tag_as_one_span_and_read_back(spans, expected):
    from bio_mrc.tags import chunk_bounds, spans_to_tags

    tags = spans_to_tags(WORDS, np.ones(len(WORDS), dtype=bool), spans)
    assert "".join("BIO"[t] for t in tags) == expected
    starts, ends = chunk_bounds(tags, strict=True)  # a valid IOB2 tagging: every span read back begins with B
    assert len(starts) == expected.count("B")


def test_a_hundred_thousand_tokens_with_fifty_thousand_spans_are_tagged_span_by_span_near_each():
    # Each span compared every token's offsets, time of the spans times the tokens: a MultiSpanQA context of 100,000
    # words tagged B at every other word took minutes to score in a comparison's tag-level report. A span reads the
    # tokens near it; tokens outside the context (offsets -1, as a window's question) stay O.
    from bio_mrc.tags import spans_to_tags

    words = 100_000
    offsets = np.concatenate([np.full((3, 2), -1), np.stack([np.arange(words) * 2, np.arange(words) * 2 + 1], axis=1)])
    mask = np.arange(len(offsets)) >= 3
    spans = [(4 * k, 4 * k + 1) for k in range(words // 2)][::-1]  # any order: tagged in order of start
    tags = spans_to_tags(offsets, mask, spans)
    assert "".join("BIO"[t] for t in tags) == "OOO" + "BO" * (words // 2)
    joined = spans_to_tags(offsets, mask, [(0, 3), (2, 7), (9, 9)])  # overlapping spans are one; (9, 9) holds nothing
    assert "".join("BIO"[t] for t in joined[:8]) == "OOOBIIIO"


def test_answer_parts_that_overlap_train_the_tagger_on_one_span(tiny_tokenizer):
    from bio_mrc.data.answer_parts import as_one_answer
    from bio_mrc.tags import chunk_bounds

    context = "dave and barbara met in town."
    example = as_one_answer(Example("n", "Who met?", context, (((0, 16),), ((9, 16),), ((17, 20),))))
    row = build_features([example], tiny_tokenizer, SMALL, heads=("bio",))[0]
    tags, words, tagged = (np.asarray(row[key]) for key in ("bio_targets", "word_offsets", "tag_mask"))
    positions = np.flatnonzero(np.asarray(tagged, dtype=bool))
    starts, ends = chunk_bounds(tags[positions].argmax(-1), strict=True)
    read = [context[words[positions[s]][0]:words[positions[e - 1]][1]] for s, e in zip(starts, ends)]
    assert read == ["dave and barbara", "met"]


def test_feature_config_holds_numpy_integers_as_python_ints():
    config = FeatureConfig(max_seq_length=np.int64(64), doc_stride=np.int32(16), max_query_length=np.int64(16))
    assert config.to_dict()["max_seq_length"] == 64 and {type(config.max_seq_length), type(config.doc_stride)} == {int}
    assert json.loads(json.dumps(config.to_dict())) == FeatureConfig(max_seq_length=64, doc_stride=16, max_query_length=16).to_dict()


def window_rows(column) -> list[list[int]]:
    """A column of windows (a list or an array a window) as lists, to compare whole."""
    return [list(map(int, row)) for row in column]


def test_one_tokenizer_cuts_windows_in_one_thread_while_another_reads_questions(tiny_tokenizer, monkeypatch):
    # The question thread sets its settings (no truncation) on the shared tokenizer just after the window call has set
    # its own (only_second): held apart, the windows keep their truncation; interleaved, they would be cut with the
    # question call's settings (one window as long as the whole context) or fail.
    import threading

    from transformers.tokenization_utils_base import TruncationStrategy

    from bio_mrc.features import pair_windows
    from bio_mrc.features import tokenizer_lock as lock_module

    from .conftest import WatchedLock

    # the backend's own overflow cutting of the whole context (windows sliced from the context alone set a truncation
    # only to cut a short probe pair)
    monkeypatch.setattr(pair_windows, "_sliced_windows", lambda *args: None)
    real = tiny_tokenizer.set_truncation_and_padding
    windows_set, questions_set = threading.Event(), threading.Event()
    # the question call asking for the tokenizer's lock while the window call holds it sets questions_set too
    monkeypatch.setitem(lock_module._LOCKS, tiny_tokenizer.backend_tokenizer, WatchedLock(threading.RLock(), questions_set))

    def set_and_interleave(*args, **kwargs):
        real(*args, **kwargs)
        if kwargs["truncation_strategy"] == TruncationStrategy.ONLY_SECOND:
            windows_set.set()
            # until the question call waits for the lock (held apart) or has set its settings (interleaved); a hang guard
            assert questions_set.wait(timeout=30), "the question call neither waited for the tokenizer nor set its settings"
        elif windows_set.is_set():
            questions_set.set()

    context = "the cat sat on the mat and the dog lay on the rug " * 20
    alone = window_rows(tokenize_windows([Example("0", "where did the cat sit", context, None)], tiny_tokenizer, SMALL)["input_ids"])
    question_alone = truncate_questions(["where did the cat sit on the mat today"], tiny_tokenizer, 4)
    monkeypatch.setattr(tiny_tokenizer, "set_truncation_and_padding", set_and_interleave)  # after the calls alone: none waits
    results, errors = {}, []

    def cut_windows():
        try:
            results["windows"] = window_rows(tokenize_windows([Example("0", "where did the cat sit", context, None)],
                                                              tiny_tokenizer, SMALL)["input_ids"])
        except Exception as err:  # noqa: BLE001 - the failure is the finding
            errors.append(err)

    thread = threading.Thread(target=cut_windows)
    thread.start()
    assert windows_set.wait(timeout=30), "the window call never set its truncation"
    questions = truncate_questions(["where did the cat sit on the mat today"], tiny_tokenizer, 4)
    thread.join()
    assert not errors
    assert results["windows"] == alone and max(map(len, alone)) <= SMALL.max_seq_length
    assert questions == question_alone and len(question_alone[0]) < len("where did the cat sit on the mat today")


def test_long_contexts_are_tokenized_in_smaller_batches(tiny_tokenizer, monkeypatch):
    """A batch's windows are Python lists until written: questions of long contexts are tokenized fewer at a time, so
    a batch holds about the same characters of context (and windows) whatever their length; the windows are the same."""
    from bio_mrc.features import windows as module

    context = " ".join(["the normans came from normandy"] * 20)  # 619 characters
    examples = [Example(f"q{i}", "where from ?", context) for i in range(12)]
    config = FeatureConfig(48, 16, 12, tag_level="subword")
    whole = rows(build_features(examples, tiny_tokenizer, config, with_targets=False, batch_size=len(examples)))
    sizes = []
    tokenize = module.tokenize_windows
    monkeypatch.setattr(module, "tokenize_windows", lambda chunk, *args: sizes.append(len(chunk)) or tokenize(chunk, *args))
    monkeypatch.setattr(module, "BATCH_CONTEXT_CHARS", 4 * len(context), raising=False)
    assert rows(build_features(examples, tiny_tokenizer, config, with_targets=False)) == whole
    assert sizes == [4, 4, 4]


def test_the_questions_no_window_holds_are_read_from_whole_columns_not_row_by_row(monkeypatch):
    """Training checks every window (hundreds of thousands on SQuAD) for the answers none holds: a column read as one
    array, where datasets' row iterator took seconds before the first training step, without a bar."""
    import datasets

    from bio_mrc.features.targets import answers_no_window_holds

    examples = [Example(f"q{k}", "who?", "a b c", answers) for k, answers in enumerate([[((0, 1),)], [((2, 3),)], [], [((4, 5),)]])]
    windows = datasets.Dataset.from_dict({"example_index": [0, 0, 1, 2, 3, 3], "answer_in_window": [False, True, False, False, False, True]})

    def row_by_row(self):
        raise AssertionError("a column read row by row")

    monkeypatch.setattr(datasets.arrow_dataset.Column, "__iter__", row_by_row)
    monkeypatch.setattr(datasets.Dataset, "__iter__", row_by_row)
    assert answers_no_window_holds(windows, examples) == ["q1"]  # q0 and q3 held by a window, q2 unanswerable
