"""Closed-class words of English and French that the stop lists leave out.

Prepositions, conjunctions, adverbs of time, degree and manner, indefinite determiners and
pronouns: a language's grammar words, a finite set that a corpus may happen never to use
(legal French writes "lorsque", not "quand"; a parts catalogue never says "although").
Typo correction takes them as spelled right: "corrected: hors -> lors" searches a word the
user did not mean. Only that rule reads this list; the gate and highlights keep their own
(``keywords.STOPWORDS`` and the question words), on which they were calibrated.
"""

from __future__ import annotations

CLOSED_CLASS_WORDS = frozenset(
    """
    about above across after against along although among around because before behind
    below beneath beside besides between beyond despite down during either else every
    except however inside instead near neither never often onto otherwise outside perhaps
    rather since sometimes still than though through throughout thus hence therefore
    toward towards unless upon via whereas whether while within without yet already
    always almost quite moreover nevertheless many much several whatever whenever wherever
    whoever whichever everyone everything someone something anyone anything nobody nothing
    afin ainsi alors après assez aucun aucune aussi autant autre autres avant beaucoup bien
    car celle celles celui ceux cependant certaines certains chaque chez comme contre déjà
    depuis dès donc dont durant également encore entre envers hors ici jamais là lors
    lorsque malgré moins néanmoins notamment où outre parmi pendant peu plusieurs pourtant
    presque puis quelque quelques quoique selon seulement sinon sous surtout tant tel telle
    telles tels tellement toujours toutefois trop vers voici voilà vraiment
    """.split()
)
