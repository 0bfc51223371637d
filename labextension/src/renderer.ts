/**
 * Rendering of the outputs the format core writes for a message file: agent replies,
 * tool calls and tool results. They are `text/markdown` outputs whose metadata says
 * what they are (see `outputKind`), so this renderer takes over `text/markdown` and
 * falls back to JupyterLab's own Markdown rendering for everything else.
 */

import { RenderedMarkdown, renderMarkdown } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { extractJarvisTags, replaceJarvisPlaceholders } from './jarvis';

export const MARKDOWN_MIME = 'text/markdown';

export type OutputKind = 'reply' | 'tool_call' | 'tool_result';

export interface IAgentOutput {
  kind: OutputKind;
  /** The footnote attributes of the output: agent, model, name, status, duration... */
  attrs: ReadonlyPartialJSONObject;
}

/**
 * What an output is, from its metadata, or `null` for any other Markdown.
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

let tokenCounter = 0;

/**
 * The `text/markdown` renderer: agent outputs get their own look, any other Markdown
 * renders exactly as JupyterLab renders it.
 */
export class AgentMarkdown extends RenderedMarkdown {
  async render(model: IRenderMime.IMimeModel): Promise<void> {
    const agent = outputKind(model.metadata);
    this.toggleClass('jp-PercentAgent-output', agent !== null);
    if (agent === null) {
      return super.render(model);
    }
    this.node.dataset['agentKind'] = agent.kind;
    this.node.textContent = '';
    const source = String(model.data[this.mimeType] ?? '');
    switch (agent.kind) {
      case 'reply':
        return this._renderReply(model, source, agent.attrs);
      case 'tool_call':
        return this._renderToolCall(model, source, agent.attrs);
      case 'tool_result':
        return this._renderToolResult(model, source, agent.attrs);
    }
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
    await this._markdown(model, prepared, body);
    if (tags.length) {
      await replaceJarvisPlaceholders(body, token, tags, this.resolver);
    }
    if (caption || attrs['reasoning']) {
      const header = document.createElement('div');
      header.className = 'jp-PercentAgent-replyHeader';
      header.textContent =
        caption + (attrs['reasoning'] ? (caption ? ' · ' : '') + 'step' : '');
      this.node.appendChild(header);
    }
    this.node.appendChild(body);
  }

  private async _renderToolCall(
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
    // A tool call is Python written by the model, or the call's own Markdown.
    const code = /^\s*(`{3,}|~{3,})/.test(source)
      ? source
      : fenced(source, 'python');
    await this._markdown(model, code, body);
    details.appendChild(body);
    this.node.appendChild(details);
  }

  private async _renderToolResult(
    model: IRenderMime.IMimeModel,
    source: string,
    attrs: ReadonlyPartialJSONObject
  ): Promise<void> {
    const status = text(attrs['status']) || 'done';
    const details = document.createElement('details');
    details.className = 'jp-PercentAgent-toolResult';
    details.dataset['status'] = status;
    details.open = status !== 'success';
    const summary = document.createElement('summary');
    const tool = text(attrs['tool'] ?? attrs['name']);
    const duration = text(attrs['duration']);
    summary.textContent = [`result${tool ? `: ${tool}` : ''}`, status, duration]
      .filter(part => part)
      .join(' · ');
    details.appendChild(summary);
    const pre = document.createElement('pre');
    pre.textContent = source;
    details.appendChild(pre);
    this.node.appendChild(details);
  }

  /** Render Markdown into `host` with this widget's sanitizer, resolver and parser. */
  private _markdown(
    model: IRenderMime.IMimeModel,
    source: string,
    host: HTMLElement
  ): Promise<void> {
    return renderMarkdown({
      host,
      source,
      trusted: model.trusted,
      resolver: this.resolver,
      sanitizer: this.sanitizer,
      linkHandler: this.linkHandler,
      shouldTypeset: this.isAttached,
      latexTypesetter: this.latexTypesetter,
      markdownParser: this.markdownParser,
      translator: this.translator
    });
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
