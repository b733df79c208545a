"""Lesson 10's corpus: "it" is an animal or an object, and only the adjective after it says which.

Every sentence has ten words: an animal, an object, the pronoun "it" and, after it,
an adjective that alone decides what "it" means::

    the cat sat on the mat because it was tired     it -> cat  (animals get tired, hungry)
    the cat sat on the mat because it was wet       it -> mat  (objects get wet, dirty)
    the mat lay by the cat and it was hungry        it -> cat

Agreement cannot help (both nouns are "it"), and neither can the order of the
nouns (both orders appear, equally often). So the query of "it" must learn about the
adjective, two or three words to its right.

Held-out split: a fifth of the *pairs* (animal, object) never appear in a training
sentence. Every noun is seen in training, with other partners.

The splits are :class:`helpers.lessons.l08_training.corpus.Split` objects, as in lesson 08, except that
``targets`` holds, per sentence, the position of the noun "it" means (column 0) and the
position of the adjective that decides it (column 1).
"""

import itertools

import numpy as np

from ..l08_training.corpus import Corpus, Split

ANIMALS = ["cat", "dog", "bird", "horse", "cow", "fox", "rabbit", "mouse",
           "lion", "tiger", "bear", "wolf", "goat", "sheep", "duck", "pig"]
OBJECTS = ["mat", "box", "chair", "table", "cup", "book", "bed", "lamp",
           "rug", "coat", "shoe", "hat", "plate", "towel", "sofa", "bag"]
# The adjective decides: these two describe an animal, those two an object.
ANIMAL_ADJECTIVES = ["tired", "hungry"]
OBJECT_ADJECTIVES = ["wet", "dirty"]
ADJECTIVES = ANIMAL_ADJECTIVES + OBJECT_ADJECTIVES

# Ten words each; {a} and {b} are the nouns (either order), {adj} the adjective.
TEMPLATES = [
    "the {a} sat on the {b} because it was {adj}",   # lesson 01's sentence's shape
    "the {a} lay by the {b} and it was {adj}",
    "the {a} saw the {b} and then it was {adj}",
    "the {a} met the {b} when it was so {adj}",
    "the {a} is on the {b} but it is {adj}",
]
SENTENCE_LENGTH = 10
HELDOUT_FRACTION = 0.2


def vocabulary():
    """Every word of the corpus, sorted: the model's vocabulary."""
    template_words = {w for t in TEMPLATES for w in t.split() if not w.startswith("{")}
    return sorted(template_words | set(ANIMALS) | set(OBJECTS) | set(ADJECTIVES))


def sentences_of(animal, obj):
    """Every sentence about one pair: both orders x every template x every adjective.

    Returns
    -------
    list of (text, pronoun position, (its noun, the adjective), (first noun, second noun))
        Positions are word indices in the ten-word sentence.
    """
    if animal not in ANIMALS or obj not in OBJECTS:
        raise ValueError(f"sentences_of: need an animal and an object, got {animal!r} and {obj!r}")
    rows = []
    for first, second in ((animal, obj), (obj, animal)):
        for template, adjective in itertools.product(TEMPLATES, ADJECTIVES):
            words = template.format(a=first, b=second, adj=adjective).split()
            slots = template.split()
            nouns = (slots.index("{a}"), slots.index("{b}"))
            referent = animal if adjective in ANIMAL_ADJECTIVES else obj
            its_noun = nouns[0] if first == referent else nouns[1]
            rows.append((" ".join(words), words.index("it"), (its_noun, slots.index("{adj}")), nouns))
    return rows


def _split(rows, vocab):
    index = {w: i for i, w in enumerate(vocab)}
    return Split(sentences=[text for text, _, _, _ in rows],
                 tokens=np.array([[index[w] for w in text.split()] for text, _, _, _ in rows]),
                 query=np.array([p for _, p, _, _ in rows], dtype=int),
                 targets=np.array([t for _, _, t, _ in rows], dtype=int).reshape(-1, 2),
                 nouns=np.array([nn for _, _, _, nn in rows], dtype=int).reshape(-1, 2))


def make_corpus(seed=0, heldout_fraction=HELDOUT_FRACTION):
    """Every sentence of every (animal, object) pair, split by pairs.

    Parameters
    ----------
    seed : int
        Chooses which pairs are held out.
    heldout_fraction : float in (0, 1)
        Share of the pairs whose sentences go to the test split only.

    Returns
    -------
    helpers.lessons.l08_training.corpus.Corpus
        ``train`` and ``test`` share no pair of nouns; every noun appears in ``train``.
        Per pair: 2 orders x 5 templates x 4 adjectives = 40 sentences, half of them
        about the animal.
    """
    if not 0 < heldout_fraction < 1:
        raise ValueError(f"make_corpus: heldout_fraction must be between 0 and 1, "
                         f"got {heldout_fraction!r}")
    pairs = list(itertools.product(ANIMALS, OBJECTS))
    order = np.random.default_rng(seed).permutation(len(pairs))
    n_test = int(round(heldout_fraction * len(pairs)))
    test_pairs = [pairs[i] for i in order[:n_test]]
    train_pairs = [pairs[i] for i in order[n_test:]]
    missing = set(ANIMALS + OBJECTS) - {w for pair in train_pairs for w in pair}
    if missing:
        raise ValueError(f"make_corpus: heldout_fraction={heldout_fraction} leaves the nouns "
                         f"{sorted(missing)} out of the training split")
    vocab = vocabulary()
    train = _split([row for pair in train_pairs for row in sentences_of(*pair)], vocab)
    test = _split([row for pair in test_pairs for row in sentences_of(*pair)], vocab)
    return Corpus(vocab, train, test)
