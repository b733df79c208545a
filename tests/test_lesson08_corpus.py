"""Lesson 08's corpus: agreement decides the pronoun, and the held-out split shares nothing with training."""

import numpy as np
import pytest

from helpers import data
from helpers.lessons.l08_training import corpus
from helpers.lessons.l08_training.corpus import MEN, PRONOUN, SENTENCE_LENGTH, THINGS, WOMEN, make_corpus

KIND = {**{w: "man" for w in MEN}, **{w: "woman" for w in WOMEN}, **{w: "thing" for w in THINGS}}
AGREES = {"he": "man", "she": "woman", "it": "thing"}


@pytest.fixture(scope="module")
def built():
    return make_corpus()


def noun_pairs(split):
    return {frozenset(s.split()[j] for j in nouns) for s, nouns in zip(split.sentences, split.nouns)}


SPLITS = ["train", "test"]


def test_no_sentence_is_in_both_splits(built):
    assert not set(built.train.sentences) & set(built.test.sentences)


def test_no_pair_of_nouns_is_in_both_splits(built):
    assert not noun_pairs(built.train) & noun_pairs(built.test)


def test_every_noun_is_seen_in_training(built):
    seen = {s.split()[j] for s, nouns in zip(built.train.sentences, built.train.nouns) for j in nouns}
    assert seen == set(KIND)


def test_a_fifth_of_the_pairs_is_held_out(built):
    # 20 nouns of each of 3 kinds: 3 * 20 * 20 = 1200 pairs of different kinds.
    assert len(noun_pairs(built.train)) + len(noun_pairs(built.test)) == 1200
    assert len(noun_pairs(built.test)) == 240
    assert len(built.test) == 240 * corpus.SENTENCES_PER_PAIR


@pytest.mark.parametrize("split", SPLITS)
def test_tokens_spell_the_sentences(built, split):
    part = getattr(built, split)
    words = np.array(built.vocab)[part.tokens]
    assert [" ".join(w) for w in words] == part.sentences
    assert part.tokens.shape == (len(part), SENTENCE_LENGTH)


@pytest.mark.parametrize("split", SPLITS)
def test_the_query_is_the_only_pronoun(built, split):
    part = getattr(built, split)
    for sentence, q in zip(part.sentences, part.query):
        words = sentence.split()
        assert words[q] in AGREES
        assert sum(w in AGREES for w in words) == 1


@pytest.mark.parametrize("split", SPLITS)
def test_the_pronoun_agrees_with_its_noun_and_not_the_other(built, split):
    part = getattr(built, split)
    for sentence, q, (its, _), nouns in zip(part.sentences, part.query, part.targets, part.nouns):
        words = sentence.split()
        kinds = [KIND[words[j]] for j in nouns]
        assert kinds[0] != kinds[1]                       # two kinds: never ambiguous
        assert its in nouns and KIND[words[its]] == AGREES[words[q]]
        other = [j for j in nouns if j != its][0]
        assert KIND[words[other]] != AGREES[words[q]]


@pytest.mark.parametrize("split", SPLITS)
def test_the_subject_is_the_first_noun_the_second_word(built, split):
    part = getattr(built, split)
    assert np.all(part.targets[:, 1] == 1)
    assert np.all(part.nouns[:, 0] == 1)
    assert all(s.split()[1] in KIND for s in part.sentences)


def test_the_pronoun_means_the_subject_about_half_the_time(built):
    share = np.mean(built.test.targets[:, 0] == built.test.targets[:, 1])
    assert 0.4 < share < 0.6


def test_same_seed_same_corpus_and_another_seed_another_split():
    a, b, c = make_corpus(seed=0), make_corpus(seed=0), make_corpus(seed=1)
    assert a.train.sentences == b.train.sentences and a.test.sentences == b.test.sentences
    assert noun_pairs(a.test) != noun_pairs(c.test)


def test_lesson_01_sentence_is_in_the_vocabulary_but_its_nouns_never_pair(built):
    tokens = built.encode(data.IT_SENTENCE)
    assert " ".join(built.vocab[i] for i in tokens) == data.IT_SENTENCE
    assert PRONOUN["cat"] == PRONOUN["mat"] == "it"      # both things: agreement cannot decide
    assert frozenset({"cat", "mat"}) not in noun_pairs(built.train) | noun_pairs(built.test)


def test_encode_names_an_unknown_word(built):
    with pytest.raises(ValueError, match="unknown word.*'sofa'"):
        built.encode("the cat sat on the sofa")


def test_two_nouns_of_one_kind_are_refused():
    with pytest.raises(ValueError, match="'cat' and 'mat' are the same kind"):
        corpus.sentence_choices("cat", "mat")


def test_each_pair_allows_128_distinct_sentences():
    rows = [corpus._sentence(*choice) for choice in corpus.sentence_choices("king", "cup")]
    assert len(rows) == 128 == len({text for text, *_ in rows})


@pytest.mark.parametrize("fraction", [0, 1, -0.1, 1.5])
def test_heldout_fraction_outside_0_1_is_refused(fraction):
    with pytest.raises(ValueError, match="heldout_fraction"):
        make_corpus(heldout_fraction=fraction)


def test_a_split_that_hides_a_noun_from_training_is_refused():
    with pytest.raises(ValueError, match="out of the training split"):
        make_corpus(heldout_fraction=0.99)
