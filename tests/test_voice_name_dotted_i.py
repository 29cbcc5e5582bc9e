"""A capital dotted I (``İ``, U+0130; case folding leaves an ``i`` and a combining dot above) and the dotless
``ı`` (whose capital is ``I``) are look-alikes of ``I`` in voice names (issue 57): ``İda`` cannot be saved beside
``Ida``, in the folder store as in every store (``check_free``), while a lookup by name still needs the name."""

from __future__ import annotations

import pytest

from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.text.voice_names import check_free, find_name, look_alike_key, unique_name


@pytest.mark.parametrize("name, other", [("İda", "Ida"), ("ıda", "Ida"), ("İSTANBUL", "istanbul"),
                                         ("Kırk", "KIRK"), ("ȷan", "Jan"), ("i\u0307da", "Ida")])
def test_dotted_and_dotless_i_collide_with_i(name, other):
    assert look_alike_key(name) == look_alike_key(other)
    with pytest.raises(InvalidInput, match="looks the same"):
        check_free(name, [other])
    assert unique_name(name, [other]) == f"{name} 2"


def test_other_marks_and_lookups_are_unchanged():
    assert look_alike_key("Ïda") != look_alike_key("Ida")       # a diaeresis is another letter's mark
    assert look_alike_key("Ida") == "ida"
    assert find_name("İda", ["Ida"]) is None                     # a lookup is by the name, not its look-alikes
    assert check_free("Ada", ["Ida"]) == "Ada"
