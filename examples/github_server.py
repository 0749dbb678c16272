"""A GitHub-like MCP server with 62 tools in 9 groups, returning canned data (no network).

Run it over stdio with ``python examples/github_server.py``, or over streamable
HTTP with ``python examples/github_server.py --http --port 8000``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult

from fastmcp_filtering import FilterMiddleware, Group, Tag, in_group, install

# fmt: off
GROUPS = [
    Group("code", title="Code", description="Source code: repositories and pull requests"),
    Group("repos", title="Repositories", description="Browse and change repositories, files, branches and commits", parent="code"),
    Group("pull_requests", title="Pull Requests", description="Open, review and merge pull requests", parent="code"),
    Group("issues", title="Issue Tracking", description="Create, triage and comment on issues"),
    Group("actions", title="Actions", description="CI workflows, runs, jobs and artifacts"),
    Group("releases", title="Releases", description="Releases and tags"),
    Group("security", title="Security", description="Code scanning, secret scanning and Dependabot alerts"),
    Group("orgs", title="Organizations", description="Users, organization members and teams"),
    Group(
        "admin",
        title="Administration",
        description="Destructive administration: delete, transfer, archive, protect",
        tools=["delete_*", "transfer_repo", "archive_repo", "update_branch_protection"],
    ),
]

TAGS = [
    Tag("stable", "Production-ready"),
    Tag("beta", "Experimental; the arguments may change"),
    Tag("read-only", "Reads data and changes nothing"),
    Tag("destructive", "Deletes or overwrites data"),
]

# name, group (None: membership from a Group pattern), tags, description, parameters
# ("name:type" required, "name:type?" optional; types: str, int, bool, list).
_TABLE: list[tuple[str, str | None, set[str], str, str]] = [
    ("list_repos", "repos", {"stable", "read-only"}, "List repositories of a user or organization", "owner:str, visibility:str?, per_page:int?"),
    ("get_repo", "repos", {"stable", "read-only"}, "Get a repository's details: description, default branch, stars", "owner:str, repo:str"),
    ("create_repo", "repos", {"stable"}, "Create a new repository for the authenticated user or an organization", "name:str, description:str?, private:bool?, org:str?"),
    ("fork_repo", "repos", {"stable"}, "Fork a repository into your account or an organization", "owner:str, repo:str, organization:str?"),
    ("get_file_contents", "repos", {"stable", "read-only"}, "Get the contents of a file or directory at a ref", "owner:str, repo:str, path:str, ref:str?"),
    ("create_or_update_file", "repos", {"stable"}, "Create or update a single file with a commit", "owner:str, repo:str, path:str, content:str, message:str, branch:str, sha:str?"),
    ("list_branches", "repos", {"stable", "read-only"}, "List branches of a repository", "owner:str, repo:str"),
    ("create_branch", "repos", {"stable"}, "Create a branch from another branch or commit", "owner:str, repo:str, branch:str, from_branch:str?"),
    ("list_commits", "repos", {"stable", "read-only"}, "List commits of a branch, newest first", "owner:str, repo:str, sha:str?, author:str?"),
    ("get_commit", "repos", {"stable", "read-only"}, "Get a commit with its diff and stats", "owner:str, repo:str, sha:str"),
    ("compare_commits", "repos", {"beta", "read-only"}, "Compare two commits or branches", "owner:str, repo:str, base:str, head:str"),
    ("search_code", "repos", {"stable", "read-only"}, "Search code across repositories", "query:str, per_page:int?"),
    ("list_pull_requests", "pull_requests", {"stable", "read-only"}, "List pull requests of a repository by state", "owner:str, repo:str, state:str?, base:str?"),
    ("get_pull_request", "pull_requests", {"stable", "read-only"}, "Get a pull request's details and mergeability", "owner:str, repo:str, pull_number:int"),
    ("create_pull_request", "pull_requests", {"stable"}, "Open a pull request to merge a branch into another", "owner:str, repo:str, title:str, head:str, base:str, body:str?, draft:bool?"),
    ("update_pull_request", "pull_requests", {"stable"}, "Change a pull request's title, body, base or state", "owner:str, repo:str, pull_number:int, title:str?, body:str?, state:str?"),
    ("merge_pull_request", "pull_requests", {"stable"}, "Merge a pull request (merge, squash or rebase)", "owner:str, repo:str, pull_number:int, merge_method:str?"),
    ("list_pull_request_files", "pull_requests", {"stable", "read-only"}, "List the files a pull request changes", "owner:str, repo:str, pull_number:int"),
    ("create_pull_request_review", "pull_requests", {"stable"}, "Review a pull request: approve, request changes or comment", "owner:str, repo:str, pull_number:int, event:str, body:str?"),
    ("request_reviewers", "pull_requests", {"stable"}, "Request reviews on a pull request from users or teams", "owner:str, repo:str, pull_number:int, reviewers:list"),
    ("add_pull_request_comment", "pull_requests", {"stable"}, "Comment on a pull request", "owner:str, repo:str, pull_number:int, body:str"),
    ("get_pull_request_diff", "pull_requests", {"beta", "read-only"}, "Get the unified diff of a pull request", "owner:str, repo:str, pull_number:int"),
    ("get_issue", "issues", {"stable", "read-only"}, "Get an issue with its labels and assignees", "owner:str, repo:str, issue_number:int"),
    ("update_issue", "issues", {"stable"}, "Change an issue's title, body, state or milestone", "owner:str, repo:str, issue_number:int, title:str?, body:str?, state:str?"),
    ("add_issue_comment", "issues", {"stable"}, "Comment on an issue", "owner:str, repo:str, issue_number:int, body:str"),
    ("list_issue_comments", "issues", {"stable", "read-only"}, "List the comments of an issue", "owner:str, repo:str, issue_number:int"),
    ("add_labels", "issues", {"stable"}, "Add labels to an issue or pull request", "owner:str, repo:str, issue_number:int, labels:list"),
    ("remove_label", "issues", {"stable"}, "Remove a label from an issue or pull request", "owner:str, repo:str, issue_number:int, label:str"),
    ("assign_issue", "issues", {"stable"}, "Assign users to an issue", "owner:str, repo:str, issue_number:int, assignees:list"),
    ("close_issue", "issues", {"stable"}, "Close an issue as completed or not planned", "owner:str, repo:str, issue_number:int, reason:str?"),
    ("search_issues", "issues", {"stable", "read-only"}, "Search issues and pull requests with GitHub's search syntax", "query:str, sort:str?"),
    ("list_workflows", "actions", {"stable", "read-only"}, "List the CI workflows of a repository", "owner:str, repo:str"),
    ("list_workflow_runs", "actions", {"stable", "read-only"}, "List runs of a workflow, newest first", "owner:str, repo:str, workflow_id:str?, branch:str?, status:str?"),
    ("get_workflow_run", "actions", {"stable", "read-only"}, "Get a workflow run's status, conclusion and timing", "owner:str, repo:str, run_id:int"),
    ("trigger_workflow", "actions", {"stable"}, "Start a workflow run on a branch (workflow_dispatch)", "owner:str, repo:str, workflow_id:str, ref:str, inputs:str?"),
    ("cancel_workflow_run", "actions", {"stable"}, "Cancel a running workflow run", "owner:str, repo:str, run_id:int"),
    ("rerun_workflow", "actions", {"stable"}, "Re-run a workflow run or only its failed jobs", "owner:str, repo:str, run_id:int, failed_only:bool?"),
    ("get_job_logs", "actions", {"beta", "read-only"}, "Get the logs of a workflow job", "owner:str, repo:str, job_id:int"),
    ("list_artifacts", "actions", {"stable", "read-only"}, "List the artifacts a workflow run produced", "owner:str, repo:str, run_id:int"),
    ("list_releases", "releases", {"stable", "read-only"}, "List the releases of a repository", "owner:str, repo:str"),
    ("get_latest_release", "releases", {"stable", "read-only"}, "Get the latest published release", "owner:str, repo:str"),
    ("create_release", "releases", {"stable"}, "Publish a release from a tag, with notes", "owner:str, repo:str, tag_name:str, name:str?, body:str?, draft:bool?"),
    ("list_tags", "releases", {"stable", "read-only"}, "List the git tags of a repository", "owner:str, repo:str"),
    ("create_tag", "releases", {"beta"}, "Create an annotated git tag on a commit", "owner:str, repo:str, tag:str, sha:str, message:str?"),
    ("list_code_scanning_alerts", "security", {"stable", "read-only"}, "List code scanning alerts by state and severity", "owner:str, repo:str, state:str?, severity:str?"),
    ("get_code_scanning_alert", "security", {"stable", "read-only"}, "Get one code scanning alert with its location", "owner:str, repo:str, alert_number:int"),
    ("list_secret_scanning_alerts", "security", {"stable", "read-only"}, "List leaked secrets found in a repository", "owner:str, repo:str, state:str?"),
    ("list_dependabot_alerts", "security", {"beta", "read-only"}, "List vulnerable dependencies Dependabot found", "owner:str, repo:str, severity:str?"),
    ("get_security_advisory", "security", {"stable", "read-only"}, "Get a security advisory by GHSA id", "ghsa_id:str"),
    ("list_org_members", "orgs", {"stable", "read-only"}, "List the members of an organization", "org:str, role:str?"),
    ("get_user", "orgs", {"stable", "read-only"}, "Get a user's public profile", "username:str"),
    ("list_teams", "orgs", {"stable", "read-only"}, "List the teams of an organization", "org:str"),
    ("add_team_member", "orgs", {"stable"}, "Add a user to a team", "org:str, team_slug:str, username:str, role:str?"),
    ("get_me", "orgs", {"stable", "read-only"}, "Get the authenticated user", ""),
    ("delete_repo", None, {"stable", "destructive"}, "Delete a repository permanently", "owner:str, repo:str"),
    ("transfer_repo", None, {"stable", "destructive"}, "Transfer a repository to another owner", "owner:str, repo:str, new_owner:str"),
    ("archive_repo", None, {"stable"}, "Archive a repository, making it read-only", "owner:str, repo:str"),
    ("delete_branch", None, {"stable", "destructive"}, "Delete a branch", "owner:str, repo:str, branch:str"),
    ("update_branch_protection", None, {"beta"}, "Set the protection rules of a branch", "owner:str, repo:str, branch:str, required_reviews:int?"),
    ("delete_release", None, {"stable", "destructive"}, "Delete a release", "owner:str, repo:str, release_id:int"),
]
# fmt: on

_JSON_TYPES = {"str": "string", "int": "integer", "bool": "boolean", "list": "array"}


class CannedTool(Tool):
    """A tool that echoes its call with canned data, standing in for a GitHub API call."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        payload = {"tool": self.name, "arguments": arguments, "status": "ok", "canned": True}
        return ToolResult(content=json.dumps(payload), structured_content=payload)


def _schema(spec: str) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in filter(None, (part.strip() for part in spec.split(","))):
        name, kind = field.split(":")
        optional = kind.endswith("?")
        json_type = _JSON_TYPES[kind.rstrip("?")]
        prop: dict[str, Any] = {"type": json_type}
        if json_type == "array":
            prop["items"] = {"type": "string"}
        properties[name] = prop
        if not optional:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


def build_catalog(
    *,
    name: str = "github-example",
    instructions: str | None = None,
    list_page_size: int | None = None,
) -> FastMCP:
    """The example's tools, prompt and resource, with no middleware: add your own."""
    mcp = FastMCP(name, instructions=instructions, list_page_size=list_page_size)

    # Two tools written the usual way, put in their group by the decorator.
    @in_group("issues")
    @mcp.tool(tags={"stable"})
    def create_issue(owner: str, repo: str, title: str, body: str = "") -> dict[str, Any]:
        """Open a new issue in a repository."""
        return {"number": 42, "title": title, "url": f"https://github.com/{owner}/{repo}/issues/42"}

    @mcp.tool(tags={"stable", "read-only"})
    @in_group("issues")
    def list_issues(owner: str, repo: str, state: str = "open") -> list[dict[str, Any]]:
        """List the issues of a repository by state."""
        return [{"number": 41, "title": "Crash on start", "state": state}]

    for name, group, tags, description, params in _TABLE:
        tool = CannedTool(name=name, description=description, parameters=_schema(params), tags=tags)
        mcp.add_tool(in_group(group)(tool) if group else tool)

    @in_group("pull_requests")
    @mcp.prompt
    def review_pull_request(owner: str, repo: str, pull_number: int) -> str:
        """Ask for a careful review of a pull request."""
        return f"Review pull request #{pull_number} of {owner}/{repo}: correctness, tests, naming."

    @in_group("repos")
    @mcp.resource("repo://{owner}/{repo}/readme")
    def readme(owner: str, repo: str) -> str:
        """The README of a repository."""
        return f"# {repo}\n\nA repository of {owner}."

    return mcp


def build_server(*, list_page_size: int | None = None) -> FastMCP:
    """The example server with ``FilterMiddleware`` over the declarations above."""
    mcp = build_catalog(
        instructions="A GitHub-like server. Call groups/list, then tools/list with a filter.",
        list_page_size=list_page_size,
    )
    install(mcp, FilterMiddleware(groups=GROUPS, tags=TAGS))
    return mcp


def serve(build: Callable[..., FastMCP], description: str | None) -> None:
    """Serve ``build(list_page_size=...)`` over stdio, or streamable HTTP with ``--http``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--page-size", type=int, default=None, help="paginate lists")
    args = parser.parse_args()
    server = build(list_page_size=args.page_size)
    if args.http:
        server.run(transport="http", host=args.host, port=args.port, show_banner=False)
    else:
        server.run(show_banner=False)


def main() -> None:
    serve(build_server, __doc__)


if __name__ == "__main__":
    main()
