// Drive examples/full_stack_server.py with the MCP TypeScript SDK and check every reply.
//
//   node interop.mjs stdio <python> <path/to/full_stack_server.py>
//   node interop.mjs http <http://127.0.0.1:PORT/mcp>
//
// Prints one JSON object ({transport, protocolVersion, checks: [{name, ok, detail?}], failed})
// on stdout and exits 1 if any check failed, 2 if the script itself could not run.
// Replies are parsed with the SDK's own zod schemas (the same parsing an SDK-based host does),
// and the methods the SDK does not know with schemas made from the SDK's zod.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  LATEST_PROTOCOL_VERSION,
  ListToolsResultSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';

const GROUPS_KEY = 'io.modelcontextprotocol/groups';

// What the server declares (examples/github_server.py, examples/full_stack_server.py).
const GROUP_NAMES = [
  'code', 'repos', 'pull_requests', 'issues', 'actions', 'releases', 'security', 'orgs', 'admin',
];
const DECLARED_TAGS = ['stable', 'beta', 'read-only', 'destructive'];
const META_TOOLS = ['call_tool', 'disable_tools', 'enable_tools', 'search_tools'];
const ISSUES = [
  'add_issue_comment', 'add_labels', 'assign_issue', 'close_issue', 'create_issue', 'get_issue',
  'list_issue_comments', 'list_issues', 'remove_label', 'search_issues', 'update_issue',
];
const ADMIN = [
  'archive_repo', 'delete_branch', 'delete_release', 'delete_repo', 'transfer_repo',
  'update_branch_protection',
];
const DESTRUCTIVE = ['delete_branch', 'delete_release', 'delete_repo', 'transfer_repo'];

// Schemas for the methods the SDK does not define, loose like the SDK's own result schemas.
const GroupsListResultSchema = z.looseObject({
  groups: z.array(
    z.looseObject({
      name: z.string(),
      title: z.string().optional(),
      description: z.string().optional(),
      _meta: z.looseObject({ [GROUPS_KEY]: z.array(z.string()).optional() }).optional(),
    }),
  ),
});
const TagsListResultSchema = z.looseObject({
  tags: z.array(z.looseObject({ name: z.string(), description: z.string().optional() })),
});
const ConcernSchema = z.looseObject({
  name: z.string(),
  description: z.string().optional(),
  values: z.array(z.string()).min(1),
  default: z.string().nullable().optional(),
  ordered: z.boolean().optional(),
});
const ConcernsListResultSchema = z.looseObject({ concerns: z.array(ConcernSchema) });
const ConcernsUpdateResultSchema = z.looseObject({
  concerns: z.record(z.string(), z.string()),
  warnings: z.array(z.string()),
});
const EnableToolsContentSchema = z.object({
  enabled: z.array(z.string()),
  enabled_groups: z.array(z.string()),
  available_tools: z.array(z.string()),
  available_groups: z.array(z.string()),
  errors: z.array(z.string()),
});
const DisableToolsContentSchema = z.object({
  disabled: z.array(z.string()),
  enabled_groups: z.array(z.string()),
  available_tools: z.array(z.string()),
  errors: z.array(z.string()),
});
const SearchToolsContentSchema = z.looseObject({
  query: z.string(),
  tools: z.array(z.looseObject({ name: z.string() })),
});

const checks = [];

function check(name, ok, detail) {
  const entry = { name, ok: Boolean(ok) };
  if (!ok && detail !== undefined) entry.detail = detail;
  checks.push(entry);
  return Boolean(ok);
}

function sameList(actual, expected) {
  return JSON.stringify(actual) === JSON.stringify(expected);
}

function sorted(names) {
  return [...names].sort();
}

function textOf(result) {
  return (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

// Runs one step; an exception fails the step (and is recorded) without stopping the others.
async function step(name, fn) {
  try {
    await fn();
  } catch (error) {
    check(name, false, String(error?.stack ?? error).slice(0, 2000));
  }
}

async function toolNames(client, params) {
  const result = await client.request({ method: 'tools/list', params }, ListToolsResultSchema);
  return result.tools.map((t) => t.name);
}

function makeTransport(argv) {
  const [kind, ...rest] = argv;
  if (kind === 'stdio') {
    const [python, server] = rest;
    if (!python || !server) throw new Error('usage: interop.mjs stdio <python> <server.py>');
    // The SDK passes only a few variables by default; the server needs the venv's environment.
    return new StdioClientTransport({ command: python, args: [server], env: { ...process.env }, stderr: 'ignore' });
  }
  if (kind === 'http') {
    const [url] = rest;
    if (!url) throw new Error('usage: interop.mjs http <url>');
    return new StreamableHTTPClientTransport(new URL(url));
  }
  throw new Error(`unknown transport ${kind}: use stdio or http`);
}

async function run(client) {
  let listChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged += 1;
  });

  await step('initialize', async () => {
    const caps = client.getServerCapabilities() ?? {};
    const version = client.getServerVersion();
    check('initialize: server name', version?.name === 'github-full-stack', version);
    // The SDK keeps `experimental` of the capabilities; the proposals' keys ride there too.
    check(
      'initialize: experimental.filtering',
      caps.experimental?.filtering?.groups?.listChanged === true,
      caps.experimental,
    );
    check('initialize: experimental.concerns', caps.experimental?.concerns !== undefined, caps.experimental);
    // The grouping extension, where its TypeScript add-on registers and reads it.
    check(
      'initialize: the grouping extension',
      caps.experimental?.['io.modelcontextprotocol/grouping']?.listChanged === true,
      caps.experimental,
    );
    check('initialize: tools.listChanged', caps.tools?.listChanged === true, caps.tools);
  });

  await step('groups/list', async () => {
    const result = await client.request({ method: 'groups/list' }, GroupsListResultSchema);
    const names = result.groups.map((g) => g.name);
    check('groups/list: names in declaration order', sameList(names, GROUP_NAMES), names);
    const repos = result.groups.find((g) => g.name === 'repos');
    check('groups/list: repos has parent code', sameList(repos?._meta?.[GROUPS_KEY], ['code']), repos);
  });

  await step('tags/list', async () => {
    const result = await client.request({ method: 'tags/list' }, TagsListResultSchema);
    const names = result.tags.map((t) => t.name);
    check('tags/list: declared tags first', sameList(names.slice(0, 4), DECLARED_TAGS), names);
  });

  await step('tools/list', async () => {
    const result = await client.listTools();
    const names = sorted(result.tools.map((t) => t.name));
    check('tools/list: initial groups and meta-tools', sameList(names, sorted([...ISSUES, ...META_TOOLS])), names);
    const issue = result.tools.find((t) => t.name === 'create_issue');
    check('tools/list: group marks in _meta', sameList(issue?._meta?.[GROUPS_KEY], ['issues']), issue?._meta);
  });

  await step('tools/list filter', async () => {
    const readOnly = await toolNames(client, { filter: { groups: ['issues'], tags: ['read-only'] } });
    check(
      'tools/list filter: issues + read-only',
      sameList(sorted(readOnly), ['get_issue', 'list_issue_comments', 'list_issues', 'search_issues']),
      readOnly,
    );
    // A filter narrows what progressive disclosure shows; it never shows a group not enabled.
    const admin = await toolNames(client, { filter: { groups: ['admin'] } });
    check('tools/list filter: admin not enabled yet', admin.length === 0, admin);
  });

  await step('tools/list filter, unknown group', async () => {
    // SEP-1300: ANY of the named groups; a name no group has matches nothing and is warned of.
    const result = await client.request(
      { method: 'tools/list', params: { filter: { groups: ['no_such_group'] } } },
      ListToolsResultSchema,
    );
    const warnings = result._meta?.['io.github.fastmcp-filtering/warnings'] ?? [];
    check(
      'tools/list filter: unknown group matches nothing, warned of',
      result.tools.length === 0 && warnings.some((w) => w.includes('no_such_group')),
      { tools: result.tools.length, warnings },
    );
  });

  await step('tools/list query', async () => {
    const names = await toolNames(client, { query: 'comment on an issue' });
    check('tools/list query: best match first', names[0] === 'add_issue_comment', names);
    const allowed = new Set([...ISSUES, ...META_TOOLS]);
    check('tools/list query: only visible tools', names.every((n) => allowed.has(n)), names);
    check('tools/list query: at most max_results', names.length <= 10, names.length);
    const both = await toolNames(client, { query: 'list', filter: { groups: ['issues'], tags: ['read-only'] } });
    check(
      'tools/list query + filter: within the filter',
      both.length > 0 && both.every((n) => ['get_issue', 'list_issue_comments', 'list_issues', 'search_issues'].includes(n)),
      both,
    );
  });

  await step('search_tools', async () => {
    const result = await client.callTool({ name: 'search_tools', arguments: { query: 'delete a repository' } });
    const content = SearchToolsContentSchema.parse(result.structuredContent);
    // delete_repo's group is not enabled yet: search may offer it only with the call that
    // enables the group, never as a callable tool with its schema.
    const offered = content.tools.filter((t) => !t.available_after || t.inputSchema);
    check(
      'search_tools: hidden tools only as groups to enable',
      !offered.some((t) => t.name === 'delete_repo') &&
        content.tools.every((t) => !t.available_after || !t.inputSchema),
      content.tools.map((t) => [t.name, t.available_after ?? 'callable']),
    );
  });

  await step('concerns/list', async () => {
    const result = await client.request({ method: 'concerns/list' }, ConcernsListResultSchema);
    const risk = result.concerns.find((c) => c.name === 'risk');
    check('concerns/list: risk declared', sameList(risk?.values, ['safe', 'destructive']) && risk?.ordered === true, result);
  });

  await step('enable_tools', async () => {
    const before = listChanged;
    const result = await client.callTool({ name: 'enable_tools', arguments: { groups: ['admin'] } }, CallToolResultSchema);
    const content = EnableToolsContentSchema.parse(result.structuredContent);
    check('enable_tools: admin enabled', sameList(content.enabled, ['admin']) && content.errors.length === 0, content);
    check('enable_tools: enabled_groups', sameList(content.enabled_groups, ['issues', 'admin']), content);
    const names = sorted(await toolNames(client, {}));
    check('enable_tools: admin tools listed', sameList(names, sorted([...ISSUES, ...ADMIN, ...META_TOOLS])), names);
    // The notification may trail the reply on another stream: give it a moment.
    for (let i = 0; i < 50 && listChanged === before; i += 1) await new Promise((r) => setTimeout(r, 20));
    check('enable_tools: tools/list_changed received', listChanged > before, { before, after: listChanged });
  });

  await step('concerns/update', async () => {
    const result = await client.request(
      { method: 'concerns/update', params: { concerns: { risk: 'safe' } } },
      ConcernsUpdateResultSchema,
    );
    check('concerns/update: effective concerns', sameList(result.concerns, { risk: 'safe' }), result);
    const names = await toolNames(client, {});
    check('concerns/update: destructive tools hidden', DESTRUCTIVE.every((n) => !names.includes(n)), names);
    check('concerns/update: safe admin tools kept', names.includes('archive_repo'), names);
    const admin = sorted(await toolNames(client, { filter: { groups: ['admin'] } }));
    check('concerns/update + filter', sameList(admin, ['archive_repo', 'update_branch_protection']), admin);
    const refused = await client.callTool({ name: 'delete_repo', arguments: { owner: 'o', repo: 'r' } });
    const text = textOf(refused);
    check('concerns: excluded tool refused naming the concern', refused.isError === true && text.includes("concern 'risk'"), text);
  });

  await step('hidden tool refused with hint', async () => {
    const result = await client.callTool({ name: 'create_branch', arguments: { owner: 'o', repo: 'r', branch: 'b' } });
    const text = textOf(result);
    check(
      'hidden tool: refused with the enable_tools hint',
      result.isError === true && text.includes('enable_tools(groups=["code", "repos"])'),
      text,
    );
    const proxied = await client.callTool({
      name: 'call_tool',
      arguments: { name: 'create_branch', arguments: { owner: 'o', repo: 'r', branch: 'b' } },
    });
    check(
      'call_tool proxy: hidden tool refused too',
      proxied.isError === true && textOf(proxied).includes('enable_tools(groups='),
      textOf(proxied),
    );
  });

  await step('call enabled tools', async () => {
    const direct = await client.callTool({ name: 'create_issue', arguments: { owner: 'o', repo: 'r', title: 't' } });
    check('tools/call: visible tool runs', !direct.isError && direct.structuredContent?.number === 42, direct);
    const proxied = await client.callTool({
      name: 'call_tool',
      arguments: { name: 'archive_repo', arguments: { owner: 'o', repo: 'r' } },
    });
    check('call_tool proxy: enabled tool runs', !proxied.isError && textOf(proxied).includes('archive_repo'), proxied);
  });

  await step('disable_tools', async () => {
    const result = await client.callTool({ name: 'disable_tools', arguments: { groups: ['admin'] } }, CallToolResultSchema);
    const content = DisableToolsContentSchema.parse(result.structuredContent);
    check('disable_tools: admin disabled', sameList(content.disabled, ['admin']) && sameList(content.enabled_groups, ['issues']), content);
    const names = await toolNames(client, {});
    check('disable_tools: admin tools gone', ADMIN.every((n) => !names.includes(n)), names);
  });

  await step('concerns/update reset', async () => {
    const result = await client.request({ method: 'concerns/update', params: { concerns: {} } }, ConcernsUpdateResultSchema);
    check('concerns/update {}: back to defaults', sameList(result.concerns, {}), result);
  });
}

async function main() {
  const transportKind = process.argv[2];
  const client = new Client({ name: 'fastmcp-filtering-interop', version: '0.0.0' });
  const transport = makeTransport(process.argv.slice(2));
  // The client hands the negotiated version to transports that use it (HTTP headers); record it
  // for stdio too, so the summary says which protocol era was spoken.
  let negotiated = null;
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version) => {
    negotiated = version;
    setVersion?.(version);
  };
  await client.connect(transport);
  try {
    await run(client);
  } finally {
    await client.close();
  }
  const failed = checks.filter((c) => !c.ok).length;
  const summary = {
    transport: transportKind,
    protocolVersion: negotiated,
    sdkProtocolVersion: LATEST_PROTOCOL_VERSION,
    checks,
    failed,
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  process.exitCode = failed === 0 ? 0 : 1;
}

main().catch((error) => {
  process.stdout.write(`${JSON.stringify({ error: String(error?.stack ?? error), checks, failed: -1 })}\n`);
  process.exitCode = 2;
});
