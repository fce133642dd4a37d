"""Answer checks: unknown [n] removed and reported, uncited sentences flagged."""
from __future__ import annotations


from citeline.query.answer_check import check_answer, says_not_in_sources, split_sentences


def test_fully_cited_answer_passes_unchanged():
    answer = "KV caches grow with context [1]. Paging reduces waste [2]."
    check = check_answer(answer, (1, 2))
    assert check.answer == answer
    assert (check.cited, check.unknown, check.uncited) == ((1, 2), (), ())
    assert check.ok


def test_unknown_number_is_removed_with_its_space_and_its_sentence_flagged():
    check = check_answer("Paris is large [1]. It has seven bridges [7].", (1, 2, 3))
    assert check.answer == "Paris is large [1]. It has seven bridges."
    assert check.unknown == (7,)
    assert check.uncited == ("It has seven bridges.",)
    assert check.cited == (1,)
    assert not check.ok


def test_zero_is_not_a_source_number():
    check = check_answer("Claim [0].", (1,))
    assert (check.answer, check.unknown) == ("Claim.", (0,))


def test_comma_lists_keep_only_the_valid_numbers():
    check = check_answer("A and B hold [1, 7, 2].", (1, 2))
    assert check.answer == "A and B hold [1, 2]."
    assert (check.cited, check.unknown, check.uncited) == ((1, 2), (7,), ())


def test_comma_list_without_spaces_and_all_valid_is_left_as_written():
    check = check_answer("A holds [2,1].", (1, 2))
    assert (check.answer, check.cited) == ("A holds [2,1].", (1, 2))


def test_adjacent_brackets_each_checked():
    check = check_answer("A holds [1][9][2].", (1, 2))
    assert check.answer == "A holds [1][2]."
    assert (check.cited, check.unknown) == ((1, 2), (9,))


def test_unknown_numbers_reported_once_in_order_of_appearance():
    check = check_answer("X [9]. Y [5][9]. Z [1].", (1,))
    assert check.unknown == (9, 5)
    assert check.uncited == ("X.", "Y.")


def test_uncited_sentences_are_flagged_in_order():
    answer = "First claim [1]. Second claim without source. Third claim [2]! Fourth?"
    check = check_answer(answer, (1, 2))
    assert check.uncited == ("Second claim without source.", "Fourth?")


def test_citation_after_the_full_stop_belongs_to_the_sentence_before():
    check = check_answer("The cache is paged. [1] Blocks are 16 tokens. [2]", (1, 2))
    assert check.uncited == ()


def test_sentence_saying_the_sources_lack_the_answer_needs_no_citation():
    for answer in (
        "The sources do not contain the answer.",
        "I cannot find this in the provided sources.",
        "The provided context doesn't mention GPU prices.",
        "There is no information about that in the documents.",
    ):
        check = check_answer(answer, (1, 2, 3, 4))
        assert check.uncited == (), answer
        assert check.ok


def test_a_factual_negative_is_still_a_claim():
    check = check_answer("The model does not include bias terms.", (1, 2))
    assert check.uncited == ("The model does not include bias terms.",)


def test_headings_list_lead_ins_and_bare_punctuation_are_not_claims():
    answer = "## Summary\nThe steps are:\n- install it [1]\n- reboot [2]\n---"
    assert check_answer(answer, (1, 2)).uncited == ()


def test_uncited_list_item_is_flagged():
    answer = "Steps:\n- install it [1]\n- reboot"
    assert check_answer(answer, (1,)).uncited == ("- reboot",)


def test_decimals_do_not_split_sentences():
    assert split_sentences("Recall was 0.5 at n = 64 [1]. Fine.") == [
        "Recall was 0.5 at n = 64 [1].",
        "Fine.",
    ]


def test_no_sources_makes_every_number_unknown():
    check = check_answer("X [1].", ())
    assert (check.answer, check.unknown, check.uncited) == ("X.", (1,), ("X.",))


def test_a_number_the_server_did_not_give_is_unknown_even_inside_the_range():
    # The server's sources are 1 and 3 (say 2 was dropped): [2] names nothing it sent.
    check = check_answer("Vacation is 90 days [2]. Sick leave is 10 days [3].", (1, 3))
    assert check.unknown == (2,) and check.cited == (3,)
    assert check.uncited == ("Vacation is 90 days.",)


def test_an_escaped_number_echoed_from_a_document_cites_nothing():
    # The prompt writes a document's own "[2]" as "\[2]" (query.prompt); echoed, it is no citation.
    check = check_answer("Employees get 90 days \\[2].", (1, 2))
    assert check.cited == () and check.unknown == ()
    assert check.uncited == ("Employees get 90 days \\[2].",)


def test_not_in_sources_detection_needs_a_word_for_the_sources():
    assert says_not_in_sources("The excerpts do not say.")
    assert not says_not_in_sources("Caching does not cover writes.")


def test_to_dict_for_json_output():
    data = check_answer("A [1]. B [3].", (1, 2)).to_dict()
    assert data == {"ok": False, "cited": [1], "unknown": [3], "uncited": ["B."]}
