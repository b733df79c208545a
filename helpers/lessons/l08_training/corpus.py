"""Lesson 08's synthetic corpus: short sentences in which a pronoun refers to a noun.

Every sentence has ten words, two nouns and one pronoun, shaped like lesson 01's
"the cat sat on the mat because it was tired". The two nouns are of different
kinds -- a man, a woman or a thing -- and the pronoun (he, she, it) agrees with
exactly one of them::

    the king sat on the box because he was tired       he  -> king
    the girl met the dog when it was so happy          it  -> dog

So which noun the pronoun means is decided by agreement alone: a single attention
layer can learn it (the query of "he" looks for the key of a man). The adjective
at the end is drawn at random and tells nothing. The subject is always the first
noun, the second word.

Held-out split: a fifth of the *pairs of nouns* never appear together in a
training sentence. Every noun is seen in training (with other partners), but a
test sentence is a combination the model never saw, not a repeat.
"""

import itertools
from dataclasses import dataclass

import numpy as np

MEN = ["man", "boy", "king", "father", "uncle", "prince", "son", "brother", "husband",
       "grandfather", "nephew", "gentleman", "lord", "duke", "monk", "emperor", "groom",
       "actor", "waiter", "wizard"]
WOMEN = ["woman", "girl", "queen", "mother", "aunt", "princess", "daughter", "sister", "wife",
         "grandmother", "niece", "lady", "duchess", "nun", "empress", "bride", "actress",
         "waitress", "witch", "heroine"]
THINGS = ["cat", "dog", "bird", "mat", "box", "car", "ball", "chair", "horse", "table", "cup",
          "book", "bed", "tree", "lamp", "boat", "rock", "door", "clock", "fish"]
PRONOUN = {**{w: "he" for w in MEN}, **{w: "she" for w in WOMEN}, **{w: "it" for w in THINGS}}
ADJECTIVES = ["tired", "happy", "old", "wet", "big", "small", "late", "cold"]

# Ten words each; {a} and {b} are the nouns, {p} the pronoun, {adj} the adjective.
TEMPLATES = [
    "the {a} sat on the {b} because {p} was {adj}",   # lesson 01's sentence's shape
    "the {a} saw the {b} and then {p} was {adj}",
    "the {a} told the {b} that {p} was very {adj}",
    "the {a} met the {b} when {p} was so {adj}",
]
SENTENCE_LENGTH = 10
HELDOUT_FRACTION = 0.2
SENTENCES_PER_PAIR = 16    # drawn from the 128 that each pair of nouns allows

# The relations a task asks about, all read from the pronoun (the query token).
# "its noun" needs agreement (the query of "she" looks for a woman's key); "the subject"
# is the first noun, always the second word here, so position alone finds it.
RELATIONS = ("its noun", "the subject")


@dataclass
class Split:
    """One part of the corpus (train or test), as arrays.

    Attributes
    ----------
    sentences : list of str, length N
    tokens : int ndarray, shape (N, SENTENCE_LENGTH)
        Each word's index in the vocabulary.
    query : int ndarray, shape (N,)
        Position of the pronoun.
    targets : int ndarray, shape (N, 2)
        Positions of the pronoun's noun (column 0) and of the sentence's subject, the
        first noun (column 1). They are the same word when the pronoun means the subject.
    nouns : int ndarray, shape (N, 2)
        Positions of the first and the second noun.
    """

    sentences: list
    tokens: np.ndarray
    query: np.ndarray
    targets: np.ndarray
    nouns: np.ndarray

    def __len__(self):
        return len(self.sentences)


@dataclass
class Corpus:
    """The vocabulary and the two splits. ``vocab[i]`` is the word with index i."""

    vocab: list
    train: Split
    test: Split

    def encode(self, sentence):
        """Word indices of a sentence, shape (n,); a clear error for an unknown word."""
        words = sentence.lower().split()
        unknown = [w for w in words if w not in self.vocab]
        if unknown:
            raise ValueError(f"encode: unknown word(s) {unknown}; the vocabulary is {self.vocab}")
        return np.array([self.vocab.index(w) for w in words])


def vocabulary():
    """Every word of the corpus, sorted: the model's vocabulary."""
    template_words = {w for t in TEMPLATES for w in t.split() if not w.startswith("{")}
    return sorted(template_words | set(PRONOUN) | {"he", "she", "it"} | set(ADJECTIVES))


def _sentence(template, a, b, adjective, referent):
    """The sentence; its pronoun's position; positions of (its noun, the subject); of the nouns."""
    text = template.format(a=a, b=b, p=PRONOUN[referent], adj=adjective)
    # The positions of {a}, {b} and {p} in the template (each fills exactly one word).
    slots = template.split()
    pos_a, pos_b, pos_p = slots.index("{a}"), slots.index("{b}"), slots.index("{p}")
    return text, pos_p, (pos_a if referent == a else pos_b, pos_a), (pos_a, pos_b)


def sentence_choices(a, b):
    """Every way to write a sentence about nouns a and b (of different kinds): 128 of them.

    Returns a list of ``(template, first noun, second noun, adjective, referent)``:
    both orders of the nouns, every template and adjective, either noun as the referent.
    """
    if PRONOUN[a] == PRONOUN[b]:
        raise ValueError(f"sentence_choices: {a!r} and {b!r} are the same kind "
                         f"(both '{PRONOUN[a]}'): the pronoun would be ambiguous")
    return [(template, first, second, adjective, referent)
            for first, second in ((a, b), (b, a))
            for template in TEMPLATES
            for adjective in ADJECTIVES
            for referent in (first, second)]


def _split(rows, vocab):
    index = {w: i for i, w in enumerate(vocab)}
    sentences = [text for text, _, _, _ in rows]
    tokens = np.array([[index[w] for w in text.split()] for text in sentences])
    query = np.array([p for _, p, _, _ in rows], dtype=int)
    targets = np.array([t for _, _, t, _ in rows], dtype=int)
    nouns = np.array([nn for _, _, _, nn in rows], dtype=int)
    return Split(sentences, tokens.reshape(-1, SENTENCE_LENGTH), query,
                 targets.reshape(-1, 2), nouns.reshape(-1, 2))


def make_corpus(seed=0, heldout_fraction=HELDOUT_FRACTION):
    """Build the corpus and split it by pairs of nouns.

    Each pair of nouns of different kinds allows 128 sentences (both orders, every
    template and adjective, either noun as the referent); the corpus holds
    :data:`SENTENCES_PER_PAIR` of them, drawn at random.

    Parameters
    ----------
    seed : int
        Chooses which pairs of nouns are held out, and which sentences each pair gets.
    heldout_fraction : float in (0, 1)
        Share of the noun pairs whose sentences go to the test split only.

    Returns
    -------
    Corpus
        ``train`` and ``test`` share no sentence and no pair of nouns; every noun
        appears in ``train``.
    """
    if not 0 < heldout_fraction < 1:
        raise ValueError(f"make_corpus: heldout_fraction must be between 0 and 1, "
                         f"got {heldout_fraction!r}")
    nouns = MEN + WOMEN + THINGS
    pairs = [(a, b) for a, b in itertools.combinations(nouns, 2) if PRONOUN[a] != PRONOUN[b]]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pairs))
    n_test = int(round(heldout_fraction * len(pairs)))
    test_pairs = [pairs[i] for i in order[:n_test]]
    train_pairs = [pairs[i] for i in order[n_test:]]
    missing = set(nouns) - {w for pair in train_pairs for w in pair}
    if missing:
        raise ValueError(f"make_corpus: heldout_fraction={heldout_fraction} leaves the nouns "
                         f"{sorted(missing)} out of the training split")

    def sample(pair):
        choices = sentence_choices(*pair)
        picked = rng.choice(len(choices), SENTENCES_PER_PAIR, replace=False)
        return [_sentence(*choices[i]) for i in picked]

    vocab = vocabulary()
    train = _split([row for pair in train_pairs for row in sample(pair)], vocab)
    test = _split([row for pair in test_pairs for row in sample(pair)], vocab)
    return Corpus(vocab, train, test)
