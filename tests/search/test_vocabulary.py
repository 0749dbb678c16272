"""The words a query word nearly matches: typo neighbours and longer words, as the index changes."""

from __future__ import annotations

from fastmcp_filtering.retrieval.ranking import Vocabulary


def vocabulary(*words: str) -> tuple[dict[str, int], Vocabulary]:
    terms = dict.fromkeys(words, 1)
    return terms, Vocabulary(terms.keys())


class TestNear:
    def test_one_edit_away_each_way(self) -> None:
        _, words = vocabulary("pull", "push", "request", "repo")
        assert words.near("pul") == ["pull"]  # insertion
        assert words.near("pulll") == ["pull"]  # deletion
        assert words.near("pusl") == ["pull", "push"]  # substitution
        assert words.near("reqeust") == ["request"]  # swap

    def test_the_word_itself_is_not_its_own_neighbour(self) -> None:
        _, words = vocabulary("pull", "pulls")
        assert words.near("pull") == ["pulls"]

    def test_follows_words_added_and_dropped_after_the_first_lookup(self) -> None:
        terms, words = vocabulary("pull")
        assert words.near("pusk") == []
        terms["push"] = 1
        words.added("push")
        assert words.near("pusk") == ["push"]
        del terms["push"]
        words.dropped("push")
        assert words.near("pusk") == []


class TestPrefixed:
    def test_longer_words_only_sorted(self) -> None:
        _, words = vocabulary("repository", "repo", "report", "rep", "pull")
        assert list(words.prefixed("repo")) == ["report", "repository"]

    def test_follows_words_added_and_dropped(self) -> None:
        terms, words = vocabulary("repository")
        assert list(words.prefixed("repo")) == ["repository"]
        terms["repos"] = 1
        words.added("repos")
        assert list(words.prefixed("repo")) == ["repos", "repository"]
        del terms["repository"]
        words.dropped("repository")
        assert list(words.prefixed("repo")) == ["repos"]
