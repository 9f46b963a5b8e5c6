"""The other mentions of an answer's text: whole words only, never overlapping the answer's own spans."""

from hypothesis import given, settings, strategies as st

from bio_mrc.answer_text import mentions, with_every_mention

from .conftest import property_examples


def test_mentions_are_whole_words_left_to_right():
    context = "Jack met Jackson. Jack's dog, Jack Smith and hijack: Jack"
    assert mentions(context, "Jack") == [(0, 4), (18, 22), (30, 34), (53, 57)]
    assert [context[s:e] for s, e in mentions(context, "Jack Smith")] == ["Jack Smith"]


def test_a_combining_mark_after_a_text_makes_it_part_of_a_longer_word():
    # A vowel sign or an accent written apart belongs to the letter before it: "राम" (Ram) is no mention
    # inside "रामायण" (the Ramayana), nor "Zoe" inside "Zoë" written with U+0308; they were tagged as the answer.
    hindi = "राम ने रामायण पढ़ी। राम घर गया।"
    assert mentions(hindi, "राम") == [(0, 3), (20, 23)]
    assert mentions("Zoe\u0308 met Zoe.", "Zoe") == [(9, 12)]
    assert mentions("Zoe\u0308 met Zoe\u0308.", "Zoe\u0308") == [(0, 4), (9, 13)]
    assert with_every_mention(hindi, ((0, 3),)) == ((0, 3), (20, 23))


def test_no_mention_cuts_a_user_perceived_character():
    # A skin tone, a joined emoji or a flag's other half is part of the character beside it: "👍" inside "👍🏽", "👨"
    # inside a family joined by U+200D and "🇪🇫" across "🇩🇪🇫🇷" were mentions, and their tokens were tagged as the answer.
    assert mentions("👍🏽 and 👍 here", "👍") == [(7, 8)]
    family = "👨\u200d👩\u200d👧 met 👨"
    assert mentions(family, "👨") == [(len(family) - 1, len(family))]
    assert mentions("🇩🇪🇫🇷 🇪🇫", "🇪🇫") == [(5, 7)]
    assert with_every_mention("👍 👍🏽 👍", ((0, 1),)) == ((0, 1), (5, 6))


def test_a_text_that_ends_in_punctuation_may_touch_a_word_there():
    # "U.S." ends in a full stop: a letter after it does not make it part of a longer word.
    assert mentions("the U.S.A. and the U.S.", "U.S.") == [(4, 8), (19, 23)]
    assert mentions("(1990)", "1990") == [(1, 5)]


def test_blank_text_and_absent_text_have_no_mentions():
    assert mentions("a b c", " ") == []
    assert mentions("a b c", "d") == []


def test_the_annotated_spans_come_first_then_the_other_mentions_in_order():
    context = "Ann met Bob. Later Bob met Ann and Bobby."
    assert with_every_mention(context, ((19, 22), (0, 3))) == ((19, 22), (0, 3), (8, 11), (27, 30))


def test_a_longer_texts_mentions_claim_their_characters_first():
    context = "Jack Smith and Jack. Then Jack Smith again."
    # "Jack" inside the second "Jack Smith" would overlap that mention, which is taken first.
    assert with_every_mention(context, ((0, 10), (15, 19))) == ((0, 10), (15, 19), (26, 36))


def test_a_mention_overlapping_an_annotated_span_is_not_added():
    context = "New York and York."
    assert with_every_mention(context, ((4, 8),)) == ((4, 8), (13, 17))
    assert with_every_mention(context, ((0, 8), (4, 8))) == ((0, 8), (4, 8), (13, 17))


words = st.sampled_from(["Ann", "Bob", "Bobby", "the", "and", ",", "."])


@settings(max_examples=property_examples(60), deadline=None)
@given(st.lists(words, min_size=1, max_size=14), st.data())
def test_every_added_mention_repeats_an_answer_text_and_none_overlap(tokens, data):
    context = " ".join(tokens)
    starts = [sum(len(t) + 1 for t in tokens[:i]) for i in range(len(tokens))]
    chosen = data.draw(st.lists(st.integers(0, len(tokens) - 1), min_size=1, max_size=3, unique=True))
    spans = tuple((starts[i], starts[i] + len(tokens[i])) for i in sorted(chosen))
    result = with_every_mention(context, spans)
    assert result[: len(spans)] == spans
    texts = {context[s:e] for s, e in spans}
    for start, end in result[len(spans):]:
        assert context[start:end] in texts
    ordered = sorted(result)
    assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:]))
    # every whole-word token equal to an answer text is covered
    covered = {i for i, s in enumerate(starts) if any(a <= s < b for a, b in result)}
    assert {i for i, t in enumerate(tokens) if t in texts and t.strip(",.")} <= covered


def test_a_text_of_many_mentions_is_marked_once_each():
    # "a" 40,000 times: each mention was checked against every span chosen before it (40,000² checks, minutes
    # for the 5,000,000 characters a context may hold); the characters taken are marked instead.
    context = "a b " * 40_000
    result = with_every_mention(context, ((4, 5),))
    assert len(result) == 40_000
    assert result[:3] == ((4, 5), (0, 1), (8, 9)) and result[-1] == (159_996, 159_997)


def test_an_empty_span_keeps_a_mention_that_holds_it_out():
    # An empty span overlaps a mention holding its place strictly inside, not one that begins or ends there.
    assert with_every_mention("ab ab ab", ((0, 2), (4, 4), (6, 6))) == ((0, 2), (4, 4), (6, 6), (6, 8))


def test_a_long_text_inside_a_longer_word_is_looked_for_past_the_word():
    # A 1,000-character text inside a 1,000,000-character word (a DNA sequence, a base64 blob) was compared again at
    # each of the word's characters (8 s; a 5,000,000-character context: minutes); no mention begins inside a word.
    context = "a" * 1_000_000 + " " + "a" * 1_000 + " a 1a b_a"
    assert mentions(context, "a" * 1_000) == [(1_000_001, 1_001_001)]
    assert mentions(context, "a") == [(1_001_002, 1_001_003), (1_001_009, 1_001_010)]  # not in "1a"; "_" is no letter
    assert mentions("x.y .y", ".y") == [(1, 3), (4, 6)]  # a text that begins with punctuation may follow a letter
