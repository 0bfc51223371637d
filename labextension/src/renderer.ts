/**
 * Rendering of the outputs the format core writes for a message file: agent replies,
 * tool calls and tool results. Their metadata says what they are (see `outputKind`).
 * Replies are `text/markdown` outputs and tool calls and results `text/plain` ones, so
 * two renderers take over those MIME types; each falls back to JupyterLab's own
 * rendering (Markdown, plain text) for every other output.
 */

import {
  RenderedCommon,
  RenderedMarkdown,
  RenderedText,
  renderMarkdown
} from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { extractJarvisTags, replaceJarvisPlaceholders } from './jarvis';

export const MARKDOWN_MIME = 'text/markdown';
export const TEXT_MIME = 'text/plain';

export type OutputKind = 'reply' | 'tool_call' | 'tool_result';

export interface IAgentOutput {
  kind: OutputKind;
  /** The footnote attributes of the output: agent, model, name, status, duration... */
  attrs: ReadonlyPartialJSONObject;
}

/**
 * What an output is, from its metadata, or `null` for any other output.
 */
export function outputKind(
  metadata: ReadonlyPartialJSONObject
): IAgentOutput | null {
  // The format core keeps an output's structural parts under `percent_agent`
  // (`type`: the agent's name for a reply, `tool` for a call or result) and its
  // footnote attributes flat beside it (docs/format.md).
  const ns = metadata['percent_agent'];
  if (ns === null || typeof ns !== 'object' || Array.isArray(ns)) {
    return null;
  }
  const type = (ns as ReadonlyPartialJSONObject)['type'];
  if (typeof type !== 'string' || type === '') {
    return null;
  }
  const attrs: { [key: string]: unknown } = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (key !== 'percent_agent') {
      attrs[key] = value;
    }
  }
  if (type === 'tool') {
    const kind = 'status' in attrs ? 'tool_result' : 'tool_call';
    return { kind, attrs: attrs as ReadonlyPartialJSONObject };
  }
  return {
    kind: 'reply',
    attrs: { agent: type, ...attrs } as ReadonlyPartialJSONObject
  };
}

function text(value: unknown): string {
  if (value === undefined || value === null) {
    return '';
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A fence longer than any backtick run in `code`, so the code cannot close it. */
function fenced(code: string, language: string): string {
  const runs = code.match(/`{3,}/g) ?? [];
  const longest = Math.max(2, ...runs.map(run => run.length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${language}\n${code.replace(/\n$/, '')}\n${fence}`;
}

/** A duration as written (`0.5s`), or seconds as a number (`0.5`). */
function duration(value: unknown): string {
  return typeof value === 'number' ? `${value}s` : text(value);
}

/** A tool call or result: the outputs `AgentText` takes over. */
interface IToolOutput extends IAgentOutput {
  kind: 'tool_call' | 'tool_result';
}

/** Whether an output is a tool call or result (not a reply, not `null`). */
function isTool(agent: IAgentOutput | null): agent is IToolOutput {
  return agent !== null && agent.kind !== 'reply';
}

/** Mark (or unmark, for `null`) a renderer's node as showing an agent output. */
function markAgent(widget: RenderedCommon, agent: IAgentOutput | null): void {
  widget.toggleClass('jp-PercentAgent-output', agent !== null);
  if (agent === null) {
    delete widget.node.dataset['agentKind'];
  } else {
    widget.node.dataset['agentKind'] = agent.kind;
  }
}

/** Render Markdown into `host` with the widget's sanitizer, resolver and parser. */
function markdownInto(
  widget: RenderedCommon,
  model: IRenderMime.IMimeModel,
  source: string,
  host: HTMLElement
): Promise<void> {
  return renderMarkdown({
    host,
    source,
    trusted: model.trusted,
    resolver: widget.resolver,
    sanitizer: widget.sanitizer,
    linkHandler: widget.linkHandler,
    shouldTypeset: widget.isAttached,
    latexTypesetter: widget.latexTypesetter,
    markdownParser: widget.markdownParser,
    translator: widget.translator
  });
}

/**
 * A tool call: a collapsed block "tool call: NAME" holding the code, as Python unless
 * it already is a fenced block.
 */
async function renderToolCall(
  widget: RenderedCommon,
  model: IRenderMime.IMimeModel,
  source: string,
  attrs: ReadonlyPartialJSONObject
): Promise<void> {
  const name = text(attrs['name'] ?? attrs['tool']) || 'tool';
  const details = document.createElement('details');
  details.className = 'jp-PercentAgent-toolCall';
  const summary = document.createElement('summary');
  summary.textContent = `tool call: ${name}`;
  details.appendChild(summary);
  const body = document.createElement('div');
  body.className = 'jp-PercentAgent-toolCode';
  // A tool call is Python written by the model, or the call's own Markdown.
  const code = /^\s*(`{3,}|~{3,})/.test(source)
    ? source
    : fenced(source, 'python');
  await markdownInto(widget, model, code, body);
  details.appendChild(body);
  widget.node.appendChild(details);
}

/**
 * A tool result: "result · STATUS · DURATION" over the text, collapsed on success,
 * open and marked (`data-status`, `jp-mod-failed`) on any other status.
 */
function renderToolResult(
  widget: RenderedCommon,
  source: string,
  attrs: ReadonlyPartialJSONObject
): void {
  const status = text(attrs['status']) || 'done';
  const failed = status !== 'success';
  const details = document.createElement('details');
  details.className = 'jp-PercentAgent-toolResult';
  details.classList.toggle('jp-mod-failed', failed);
  details.dataset['status'] = status;
  details.open = failed;
  const summary = document.createElement('summary');
  const tool = text(attrs['tool'] ?? attrs['name']);
  summary.textContent = [
    `result${tool ? `: ${tool}` : ''}`,
    status,
    duration(attrs['duration'])
  ]
    .filter(part => part)
    .join(' · ');
  details.appendChild(summary);
  const error = text(attrs['error']);
  if (failed && error && !source.includes(error)) {
    const message = document.createElement('div');
    message.className = 'jp-PercentAgent-toolError';
    message.textContent = error;
    details.appendChild(message);
  }
  const pre = document.createElement('pre');
  pre.textContent = source;
  details.appendChild(pre);
  widget.node.appendChild(details);
}

/** A tool call or result, in place of whatever the widget's node held. */
async function renderTool(
  widget: RenderedCommon,
  model: IRenderMime.IMimeModel,
  agent: IToolOutput
): Promise<void> {
  widget.node.textContent = '';
  const source = String(model.data[widget.mimeType] ?? '');
  if (agent.kind === 'tool_call') {
    return renderToolCall(widget, model, source, agent.attrs);
  }
  renderToolResult(widget, source, agent.attrs);
}

let tokenCounter = 0;

/**
 * The `text/markdown` renderer: agent outputs get their own look, any other Markdown
 * renders exactly as JupyterLab renders it.
 */
export class AgentMarkdown extends RenderedMarkdown {
  async render(model: IRenderMime.IMimeModel): Promise<void> {
    const agent = outputKind(model.metadata);
    markAgent(this, agent);
    if (agent === null) {
      return super.render(model);
    }
    if (isTool(agent)) {
      return renderTool(this, model, agent);
    }
    this.node.textContent = '';
    const source = String(model.data[this.mimeType] ?? '');
    return this._renderReply(model, source, agent.attrs);
  }

  private async _renderReply(
    model: IRenderMime.IMimeModel,
    source: string,
    attrs: ReadonlyPartialJSONObject
  ): Promise<void> {
    const token = `PERCENTAGENTMEDIA${++tokenCounter}X`;
    const { source: prepared, tags } = extractJarvisTags(source, token);
    const caption = [attrs['agent'], attrs['model']]
      .map(text)
      .filter(part => part)
      .join(' · ');
    const body = document.createElement('div');
    body.className = 'jp-PercentAgent-replyBody';
    await markdownInto(this, model, prepared, body);
    if (tags.length) {
      await replaceJarvisPlaceholders(body, token, tags, this.resolver);
    }
    // A reply that did not finish says why: stopped by the user, or cut off mid-stream.
    const cut =
      attrs['interrupted'] === true
        ? 'stopped'
        : attrs['incomplete'] === true
          ? 'incomplete: the connection was lost'
          : '';
    const headerText = [caption, attrs['reasoning'] ? 'step' : '', cut]
      .filter(part => part)
      .join(' · ');
    if (headerText) {
      const header = document.createElement('div');
      header.className = 'jp-PercentAgent-replyHeader';
      if (cut) {
        header.classList.add('jp-mod-cut');
      }
      header.textContent = headerText;
      this.node.appendChild(header);
    }
    this.node.appendChild(body);
  }
}

/**
 * The `text/plain` renderer: tool calls and tool results (what the format core writes
 * as `text/plain` with `percent_agent.type` "tool") get the same blocks as in
 * `AgentMarkdown`; any other plain text renders exactly as JupyterLab renders it.
 */
export class AgentText extends RenderedText {
  async render(model: IRenderMime.IMimeModel): Promise<void> {
    const agent = outputKind(model.metadata);
    const tool = isTool(agent) ? agent : null;
    markAgent(this, tool);
    // The code of a call is rendered Markdown: HTML styles, not preformatted text.
    this.toggleClass('jp-RenderedText', tool === null);
    this.toggleClass('jp-RenderedHTMLCommon', tool !== null);
    if (tool === null) {
      return super.render(model);
    }
    return renderTool(this, model, tool);
  }
}

/**
 * Replaces JupyterLab's `text/markdown` factory (same rank, same safety).
 */
export const agentMarkdownFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MARKDOWN_MIME],
  defaultRank: 60,
  createRenderer: options => new AgentMarkdown(options)
};

/**
 * Replaces JupyterLab's `text/plain` factory (same rank, same safety); streams
 * (`application/vnd.jupyter.stdout`, `...stderr`) keep JupyterLab's own.
 */
export const agentTextFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [TEXT_MIME],
  defaultRank: 120,
  createRenderer: options => new AgentText(options)
};
