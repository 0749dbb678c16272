"""The lexical ranking's rules, on the kinds of request that catalogs of real servers get wrong."""

from __future__ import annotations

from typing import Any

import pytest

from fastmcp_filtering.retrieval.ranking import BLENDED_RULES, Document, Rules, SearchIndex
from fastmcp_filtering.retrieval.text import (
    STOPWORDS,
    asks_for_a_list,
    related,
    split,
    split_name,
    stem,
    steps,
)


def catalog(*documents: Document, rules: Rules | None = None) -> SearchIndex:
    index = SearchIndex() if rules is None else SearchIndex(rules=rules)
    for document in documents:
        index.upsert(document.name, document)
    return index


def top(index: SearchIndex, query: str) -> str:
    ranked = index.search(query)
    assert ranked, f"no result for {query!r}"
    return ranked[0][0]


NOUN_TOOLS = catalog(
    Document(
        name="storage_account_get",
        description="Get the details of a storage account by name",
        params=(("account", "The storage account name"), ("subscription", "Subscription id")),
    ),
    Document(
        name="storage_account_list",
        description="List storage accounts in a subscription",
        params=(("subscription", "Subscription id"),),
    ),
    Document(
        name="storage_account_create",
        description="Create a storage account",
        params=(("account", "Name of the new storage account"), ("location", "Region")),
    ),
    Document(name="functionapp_list", description="List the function apps of a subscription"),
    Document(name="functionapp_get", description="Get one function app"),
    Document(
        name="resource_query",
        description=(
            "Query resources of any kind across services: virtual machines, function apps, "
            "storage accounts, databases, key vaults, app services, container registries, "
            "kubernetes clusters, queues, topics and more, with a query language"
        ),
        params=(("query", "The query text"),),
    ),
    Document(name="delete_branch", description="Delete a branch of a repository"),
    Document(name="create_branch", description="Create a branch in a repository"),
)


class TestVerbsTellToolsApart:
    def test_the_verb_picks_the_tool_of_one_noun(self) -> None:
        assert top(NOUN_TOOLS, "create a storage account") == "storage_account_create"
        assert top(NOUN_TOOLS, "get the storage account called logs") == "storage_account_get"
        assert top(NOUN_TOOLS, "list storage accounts") == "storage_account_list"

    def test_many_of_a_kind_is_a_list(self) -> None:
        assert top(NOUN_TOOLS, "Show me my storage accounts") == "storage_account_list"
        assert top(NOUN_TOOLS, "List all storage accounts") == "storage_account_list"
        assert top(NOUN_TOOLS, "what storage accounts do I have") == "storage_account_list"

    def test_a_request_words_the_verb_its_own_way(self) -> None:
        assert top(NOUN_TOOLS, "remove the old branch") == "delete_branch"
        assert top(NOUN_TOOLS, "make a new branch") == "create_branch"

    def test_get_is_not_a_stopword(self) -> None:
        assert top(NOUN_TOOLS, "get function app") == "functionapp_get"


class TestCompoundsAndLongDescriptions:
    def test_words_a_name_runs_together_match(self) -> None:
        assert top(NOUN_TOOLS, "Show me my function apps") == "functionapp_list"

    def test_a_long_description_of_everything_does_not_win_a_plain_request(self) -> None:
        ranked = [key for key, _ in NOUN_TOOLS.search("Show me my function apps")]
        assert ranked.index("functionapp_list") < ranked.index("resource_query")


class TestRules:
    def test_each_rule_can_be_turned_off(self) -> None:
        off = Rules(related_weight=0.0, compounds=False, list_weight=0.0)
        index = SearchIndex(rules=off)
        index.upsert("delete_branch", Document(name="delete_branch"))
        index.upsert("functionapp_list", Document(name="functionapp_list"))
        assert index.search("remove a branch")[0][0] == "delete_branch"  # "branch" alone
        assert [k for k, _ in index.search("erase")] == []
        on = SearchIndex()
        on.upsert("functionapp_list", Document(name="functionapp_list"))
        # Without the compound rule "function" only matches as the start of a longer word.
        assert on.search("function app")[0][1] > index.search("function app")[0][1]

    def test_related_verbs_are_symmetric_and_stemmed(self) -> None:
        assert stem("delete") in related(stem("remove"))
        assert stem("remove") in related(stem("deleting"))
        assert related("repositori") == ()

    def test_what_asks_for_a_list(self) -> None:
        assert asks_for_a_list("Show me my function apps")
        assert asks_for_a_list("which databases are there")
        assert not asks_for_a_list("delete old branches")
        assert not asks_for_a_list("read a file")


class TestSplittingNames:
    def test_terms_keep_whole_words_and_name_words_do_not(self) -> None:
        assert split_name("GitHubIssue", STOPWORDS) == (
            ("git", "hub", "issu", "githubissu"),
            frozenset({"git", "hub", "issu"}),
        )

    def test_stopwords_are_terms_of_a_name_but_not_its_words(self) -> None:
        terms, words = split_name("list_the_tools", STOPWORDS)
        assert terms == split("list the tools", frozenset())
        assert words == {"list"}

    def test_other_scripts_split_as_ascii_does(self) -> None:
        # Fullwidth letters are the same name once normalised, through the other path.
        assert split_name("\uff27\uff49\uff54Hub_issue", STOPWORDS) == split_name(
            "GitHub_issue", STOPWORDS
        )
        assert split("\uff27\uff49\uff54Hub issue", STOPWORDS) == split("GitHub issue", STOPWORDS)


FILLER = (
    Document(name="send_email", description="Send an email to a recipient"),
    Document(name="list_users", description="List the users of the workspace"),
    Document(name="get_weather", description="Get the weather forecast for a city"),
    Document(name="upload_file", description="Upload a file to the drive"),
    Document(name="stop_job", description="Stop a running job"),
)


def rescored(index: SearchIndex, query: str, rules: Rules) -> dict[str, float]:
    """The scores ``index``'s documents get under other ``rules``."""
    other = SearchIndex(rules=rules)
    for key in index:
        other.upsert(key, index.document(key) or Document())
    return dict(other.search(query))


class TestLongRequests:
    """Requests written out in full sentences, with the values they pass."""

    PAGED = catalog(
        *FILLER,
        Document(
            name="wiki_search",
            description="Look a term up in the wiki",
            params=(("term", "What to look for"),),
        ),
        Document(
            name="search_items",
            description="Search the item definitions",
            params=(
                ("query", "What to look for"),
                ("page", "Page of results"),
                ("pageSize", "Results per page"),
                ("pageToken", "Token of the next page"),
                ("pageOffset", "Where the page starts"),
                ("pageNumber", "Number of the page"),
                ("pageCursor", "Cursor of the page"),
            ),
        ),
    )

    def test_a_word_matching_many_longer_words_counts_once(self) -> None:
        # "page" also begins pageSize, pageToken, pageOffset...: that is still one word.
        query = "search the wiki for pages about dragons"
        assert top(self.PAGED, query) == "wiki_search"
        best = rescored(self.PAGED, query, Rules(name_coverage=0.0, near_matches="own_and_best"))
        assert best["wiki_search"] > best["search_items"]
        every = rescored(self.PAGED, query, Rules(name_coverage=0.0, near_matches="all"))
        assert every["wiki_search"] < every["search_items"]

    NOTES = catalog(
        *FILLER,
        Document(name="create_note", description="Create a note"),
        Document(name="delete_note", description="Delete a note"),
        Document(name="archive_note", description="Archive a note so it no longer shows"),
    )

    def test_a_quoted_value_is_not_what_the_request_asks(self) -> None:
        query = 'Create a note titled "delete the archive" with the body "archive it all"'
        scores = rescored(self.NOTES, query, Rules(quoted_weight=0.5))
        assert max(scores, key=scores.__getitem__) == "create_note"
        assert scores["delete_note"] < 0.75 * scores["create_note"]
        plain = dict(self.NOTES.search(query))  # the default: quoted words count in full
        assert plain["delete_note"] >= plain["create_note"]

    def test_a_request_in_quotes_is_still_the_request(self) -> None:
        quoting = SearchIndex(rules=Rules(quoted_weight=0.5))
        for key in self.NOTES:
            quoting.upsert(key, self.NOTES.document(key) or Document())
        quoted = quoting.search('"delete my note"')
        assert quoted == quoting.search("delete my note")
        assert quoted[0][0] == "delete_note"

    SERVICES = catalog(
        *FILLER,
        Document(name="NewsTool", description="Stay connected to world events"),
        Document(
            name="trending_topics",
            description="Trending topics right now; it can also show the latest news posts",
        ),
    )

    def test_a_request_that_says_a_tools_name_finds_it(self) -> None:
        query = "what is new in the news now, and also the latest headlines"
        assert top(self.SERVICES, query) == "NewsTool"
        uncovered = rescored(self.SERVICES, query, Rules(name_coverage=0.0))
        assert uncovered["NewsTool"] < uncovered["trending_topics"]

    def test_news_is_not_new(self) -> None:
        assert stem("news") != stem("new")
        assert stem("series") == "series"
        assert stem("notes") == stem("note")

    CHAINED = catalog(
        Document(name="create_alert", description="Create an alert for a place"),
        Document(name="delete_station", description="Delete a station"),
        Document(name="list_stations", description="List all stations"),
        Document(name="create_note", description="Create a note"),
        Document(name="read_file", description="Read a file"),
        Document(name="import_note_file", description="Read a note from a file"),
    )

    def test_a_request_of_several_steps_finds_each_steps_tool(self) -> None:
        # One word of each step makes a tool that does neither look best as a whole.
        query = "Create a note about the meeting, then read the file"
        unnamed = rescored(self.CHAINED, query, Rules(name_coverage=0.0, step_weight=0.0))
        assert next(iter(unnamed)) == "import_note_file"
        one_text = rescored(self.CHAINED, query, Rules(step_weight=0.0))
        by_steps = rescored(self.CHAINED, query, Rules())  # steps at 0.5, the default
        assert list(by_steps)[:3] == ["create_note", "read_file", "import_note_file"]
        # Name coverage alone puts the step tools ahead by a hair; steps by a margin.
        lead = by_steps["read_file"] / by_steps["import_note_file"]
        assert lead > 1.1 > one_text["read_file"] / one_text["import_note_file"]

    def test_a_query_can_bring_its_own_rules(self) -> None:
        query = "read file note"
        assert self.CHAINED.search(query, rules=BLENDED_RULES) == list(
            rescored(self.CHAINED, query, BLENDED_RULES).items()
        )
        assert [k for k, _ in self.CHAINED.search(query)][:2] == ["read_file", "import_note_file"]
        assert [k for k, _ in self.CHAINED.search(query, rules=BLENDED_RULES)][:2] == [
            "import_note_file",
            "read_file",
        ]

    def test_a_step_said_again_is_searched_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        searched: list[str] = []
        scores = SearchIndex._scores

        def counted(index: SearchIndex, query: str, **kwargs: Any) -> dict[str, float]:
            searched.append(query)
            return scores(index, query, **kwargs)

        monkeypatch.setattr(SearchIndex, "_scores", counted)
        once = self.CHAINED.scores("create a note, then read the file")
        searched.clear()
        again = self.CHAINED.scores("create a note, then read  the file, then read the file")
        assert again == once
        # The whole request, then each distinct step once.
        assert searched[1:] == ["create a note", "read the file"]

    def test_a_step_that_weighs_nothing_shares_nothing(self) -> None:
        # Quoted values at weight 0: the second step's only matches score 0.
        index = catalog(
            Document(name="create_note", description="Create a note"),
            Document(name="weekly_report", description="The weekly report"),
            rules=Rules(quoted_weight=0.0),
        )
        found = dict(index.search('create a note, then qqq "weekly report"'))
        assert next(iter(found)) == "create_note"
        assert all(score >= 0 for score in found.values())

    def test_a_query_cannot_change_what_was_indexed(self) -> None:
        with pytest.raises(ValueError, match="the index's stopwords"):
            self.CHAINED.search("read", rules=Rules(stopwords=frozenset()))

    def test_steps_leave_a_one_step_request_alone(self) -> None:
        query = "read the note from a file"
        assert rescored(self.CHAINED, query, Rules(step_weight=0.5)) == dict(
            self.CHAINED.search(query, rules=Rules(step_weight=0.0))
        )

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            (
                "Get the host's details and then list all scans",
                ["Get the host's details", "list all scans"],
            ),
            (
                "Start a scan, check its status, and finally, list the templates.",
                ["Start a scan, check its status", "list the templates."],
            ),
            (
                "Create a task. Additionally, assign it to Ana",
                ["Create a task.", "assign it to Ana"],
            ),
            # A part of one word is no step; one step is no chain.
            ("then delete it", []),
            ("Find the repo, then it", []),
            ("Can you also delete the old branch", []),
            # Common words, a bare noun or a contraction ask for nothing of their own.
            ("Find my notes, then could you also list scans", ["Find my notes", "list scans"]),
            ("Show the files and also the folders", []),
            (
                "Book a room. Additionally, I'm also interested in lunch",
                ["Book a room.", "interested in lunch"],
            ),
            # A value in quotes is not cut.
            (
                'Create a note called "read it then delete" and then send it to Bob',
                ['Create a note called "read it then delete"', "send it to Bob"],
            ),
            ("Send the report. It is due today.", []),
            (", then ".join(f"do step {n}" for n in range(9)), []),
        ],
    )
    def test_steps_are_cut_at_words_that_order_actions(
        self, query: str, expected: list[str]
    ) -> None:
        assert steps(query) == expected


def server_tool(server: str, name: str, description: str) -> Document:
    # Served behind the proxy: one group per upstream, named after it.
    return Document(name=name, description=description, groups=(server,))


# Tools of four reference servers (everything, filesystem, memory, time) as they list them.
REFERENCE_SERVERS = catalog(
    server_tool("everything", "echo", "Echoes back the input"),
    server_tool("everything", "add", "Adds two numbers"),
    server_tool(
        "everything", "printEnv", "Prints all environment variables, helpful for debugging"
    ),
    server_tool("everything", "getTinyImage", "Returns the MCP_TINY_IMAGE"),
    server_tool("everything", "longRunningOperation", "Demonstrates a long running operation"),
    server_tool(
        "filesystem",
        "read_text_file",
        "Read the complete contents of a file from the file system as text",
    ),
    server_tool("filesystem", "read_media_file", "Read an image or audio file"),
    server_tool(
        "filesystem",
        "write_file",
        "Create a new file or completely overwrite an existing file with new content",
    ),
    server_tool(
        "filesystem",
        "directory_tree",
        "Get a recursive tree view of files and directories as a JSON structure",
    ),
    server_tool(
        "filesystem",
        "list_directory",
        "Get a detailed listing of all files and directories in a specified path",
    ),
    server_tool("filesystem", "move_file", "Move or rename files and directories"),
    server_tool("memory", "create_entities", "Create multiple new entities in the knowledge graph"),
    server_tool(
        "memory", "add_observations", "Add new observations to existing entities in the graph"
    ),
    server_tool("memory", "read_graph", "Read the entire knowledge graph"),
    server_tool("memory", "search_nodes", "Search for nodes in the knowledge graph"),
    server_tool("time", "get_current_time", "Get current time in a specific timezone"),
    server_tool("time", "convert_time", "Convert time between timezones"),
)


class TestPlainRequestsToRealServers:
    def test_the_answer_comes_first(self) -> None:
        assert top(REFERENCE_SERVERS, "print environment variables") == "printEnv"
        ranked = [key for key, _ in REFERENCE_SERVERS.search("read a file")]
        # A tree of a directory is not a file's contents.
        assert set(ranked[:2]) == {"read_text_file", "read_media_file"}
        assert top(REFERENCE_SERVERS, "save text to a new file") == "write_file"
        assert top(REFERENCE_SERVERS, "current time in Tokyo") == "get_current_time"
        assert top(REFERENCE_SERVERS, "rename a folder") == "move_file"

    def test_a_plain_request_some_tool_answers_is_never_empty(self) -> None:
        for query in [
            "show me a picture",
            "write memory about a person",
            "what do you know about Bob",
            "stop the long operation",
            "sum two numbers",
        ]:
            assert REFERENCE_SERVERS.search(query), query


class TestWhatAClientCannotSee:
    VISIBLE = (
        *FILLER,
        Document(name="read_news", description="Read the news of the day"),
        Document(name="search_items", description="Search items", params=(("page", "Page"),)),
        Document(name="note_create", description="Create a note"),
    )
    HIDDEN = (
        Document(name="NewsPageTool", description="News pages", params=(("pageSize", "Size"),)),
        Document(name="newsroom_pager", description="Pages the newsroom"),
        Document(name="create_note_secret", description='Create a "secret" note'),
    )
    QUERIES = (
        "read the news page",
        "newsroom pager",
        'create a note called "secret news page"',
        "nwes pagesize",
        "read the news page, then create a secret note",
    )

    @pytest.mark.parametrize(
        "rules",
        [
            Rules(),
            Rules(near_matches="best", quoted_weight=0.5),
            Rules(near_matches="own_and_best", name_coverage=1.0),
            Rules(step_weight=0.0),
        ],
    )
    def test_hidden_tools_change_no_visible_ranking(self, rules: Rules) -> None:
        alone = SearchIndex(rules=rules)
        beside = SearchIndex(rules=rules)
        for document in self.VISIBLE:
            alone.upsert(document.name, document)
            beside.upsert(document.name, document)
        for document in self.HIDDEN:
            beside.upsert(document.name, document)
        visible = {d.name for d in self.VISIBLE}
        for query in self.QUERIES:
            # Their names, longer words and typo neighbours neither match nor cover a name.
            expected = [key for key, _ in alone.search(query)]
            assert [key for key, _ in beside.search(query, within=visible)] == expected


class TestStatisticsOnlySomeDocumentsCount:
    """A document only some clients may see (``in_statistics=False``) moves no field length
    average; with none or few that count, a typical catalog's lengths stand in."""

    WORDS = "room attendees agenda documents video link reminders repeat rules timezone notes"

    def mine(self) -> list[Document]:
        """Two documents only this client sees; one describes itself at length."""
        long = "Create a calendar event with " + " ".join((self.WORDS.split() * 3)[:24])
        return [
            Document(name="calendar_add", description=long, in_statistics=False),
            Document(name="new_event", description="calendar event", in_statistics=False),
        ]

    def order(self, *shared: Document) -> list[str]:
        # The rules these documents were written for: "create" counts in calendar_add's
        # description and, as a related verb, in its name (the default since counts one).
        index = catalog(*self.mine(), *shared, rules=Rules(near_matches="own_and_best"))
        within = [d.name for d in self.mine()]
        return [key for key, _ in index.search("create calendar event", within=within)]

    def test_what_does_not_count_moves_nothing(self) -> None:
        others = [
            Document(name=f"t{i}", description=self.WORDS * 4, in_statistics=False)
            for i in range(20)
        ]
        assert self.order(*others) == self.order()

    def test_one_shared_document_does_not_set_the_averages(self) -> None:
        # Counted alone, a bare ``ping`` would make every average one word: the long
        # description would then count for far less, and the order would flip.
        assert self.order(Document(name="ping")) == self.order() == ["calendar_add", "new_event"]
