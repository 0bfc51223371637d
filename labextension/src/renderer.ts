/**
 * Rendering of the outputs the format core writes for a message file: agent replies,
 * the agent's ATTP steps, tool calls and tool results. Their metadata says what they are
 * (see `outputKind`). Replies are `text/markdown` outputs and tool calls and results
 * `text/plain` ones. These renderers live only in the renderer registry of each message
 * notebook (its own clone: `messageNotebookFactories`, added by `notebook.ts`), never in the
 * application's, so other notebooks, Markdown cells and the Markdown viewer keep JupyterLab's
 * renderers (and those of any other extension).
 *
 * Model output is never trusted: whatever the cell's trust flag says, every Markdown and
 * HTML output of a message notebook is rendered with `trusted: false` through JupyterLab's
 * sanitizer and `untrusted.ts`.
 */

import {
  RenderedCommon,
  RenderedHTML,
  RenderedMarkdown,
  RenderedText,
  renderMarkdown
} from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { IAttpReply, looksLikeAttp, parseAttp } from './attp';
import { diffStart, renderDiff, showDiffBlocks } from './diff';
import { el } from './dom';
import { replaceJarvisPlaceholders } from './jarvis';
import { extractJarvisTags } from './jarvistags';
import { renderPlan } from './steps';
import { trans } from './translation';
import { armRemoteMedia, loadHeldMedia, modelSanitizer } from './untrusted';
import { formatUsage, IUsage, usageOf } from './usage';

export const MARKDOWN_MIME = 'text/markdown';
export const TEXT_MIME = 'text/plain';
export const HTML_MIME = 'text/html';

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
export function fenced(code: string, language: string): string {
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

/** The same model, untrusted: what every model output is rendered as. */
function untrusted(model: IRenderMime.IMimeModel): IRenderMime.IMimeModel {
  return {
    trusted: false,
    data: model.data,
    metadata: model.metadata,
    setData: options => model.setData(options)
  };
}

/**
 * Render model-written Markdown into `host`: untrusted, through JupyterLab's sanitizer and
 * `untrusted.ts`, with the widget's resolver and parser; its `diff` code blocks as diffs.
 */
async function markdownInto(
  widget: RenderedCommon,
  source: string,
  host: HTMLElement
): Promise<void> {
  armRemoteMedia(host);
  await renderMarkdown({
    host,
    source,
    trusted: false,
    resolver: widget.resolver,
    sanitizer: modelSanitizer(widget.sanitizer),
    linkHandler: widget.linkHandler,
    shouldTypeset: widget.isAttached,
    latexTypesetter: widget.latexTypesetter,
    markdownParser: widget.markdownParser,
    translator: widget.translator
  });
  showDiffBlocks(host);
  await loadHeldMedia(host, widget.resolver);
}

/**
 * A tool call: a collapsed block "tool call: NAME" holding the code, as Python unless
 * it already is a fenced block.
 */
async function renderToolCall(
  widget: RenderedCommon,
  source: string,
  attrs: ReadonlyPartialJSONObject
): Promise<void> {
  const name = text(attrs['name'] ?? attrs['tool']) || 'tool';
  const details = el('details', 'jp-PercentAgent-toolCall');
  const kind = text(attrs['kind']);
  details.appendChild(
    el(
      'summary',
      '',
      kind
        ? trans().__('tool call: %1 (%2)', name, kind)
        : trans().__('tool call: %1', name)
    )
  );
  if (kind) {
    // an external agent's call: its title, locations and input, as text
    details.appendChild(el('pre', '', source));
    widget.node.appendChild(details);
    return;
  }
  const body = el('div', 'jp-PercentAgent-toolCode');
  // A tool call is Python written by the model, or the call's own Markdown.
  const code = /^\s*(`{3,}|~{3,})/.test(source)
    ? source
    : fenced(source, 'python');
  await markdownInto(widget, code, body);
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
  const details = el('details', 'jp-PercentAgent-toolResult');
  details.classList.toggle('jp-mod-failed', failed);
  details.dataset['status'] = status;
  details.open = failed;
  const tool = text(attrs['tool'] ?? attrs['name']);
  const summary = [
    tool ? trans().__('result: %1', tool) : trans().__('result'),
    status,
    duration(attrs['duration'])
  ]
    .filter(part => part)
    .join(' · ');
  details.appendChild(el('summary', '', summary));
  const error = text(attrs['error']);
  if (failed && error && !source.includes(error)) {
    details.appendChild(el('div', 'jp-PercentAgent-toolError', error));
  }
  const diffAt = diffStart(source);
  if (diffAt < 0) {
    details.appendChild(el('pre', '', source));
  } else {
    // an edit (an external agent's): the text, then the diff shown as a diff, in view
    if (source.slice(0, diffAt).trim()) {
      details.appendChild(el('pre', '', source.slice(0, diffAt)));
    }
    details.appendChild(renderDiff(source.slice(diffAt)));
    details.open = true;
  }
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
    return renderToolCall(widget, source, agent.attrs);
  }
  renderToolResult(widget, source, agent.attrs);
}

/** A reply still streaming in: the kernel's in-place display has no attributes yet. */
function isStreaming(attrs: ReadonlyPartialJSONObject): boolean {
  return attrs['model'] === undefined && attrs['time'] === undefined;
}

/** A model that is a reply still streaming in (another update of it may follow). */
function isStreamingReply(model: IRenderMime.IMimeModel): boolean {
  const agent = outputKind(model.metadata);
  return agent !== null && !isTool(agent) && isStreaming(agent.attrs);
}

/** The line over a reply: agent, model, step, usage, and why it did not finish. */
export function replyHeader(
  attrs: ReadonlyPartialJSONObject
): HTMLElement | null {
  const t = trans();
  const cut =
    attrs['interrupted'] === true
      ? t.__('stopped')
      : attrs['incomplete'] === true
        ? isStreaming(attrs)
          ? t.__('incomplete') // still streaming, or saved while it streamed
          : t.__('incomplete: the connection was lost')
        : '';
  const usage: IUsage = usageOf(attrs);
  const parts = [
    text(attrs['agent']),
    text(attrs['model']),
    attrs['reasoning'] ? t.__('step') : '',
    formatUsage(usage),
    usage.duration !== null ? `${usage.duration}s` : '',
    cut
  ].filter(part => part);
  if (!parts.length) {
    return null;
  }
  const header = el('div', 'jp-PercentAgent-replyHeader', parts.join(' · '));
  header.classList.toggle('jp-mod-cut', cut !== '');
  if (usage.tokensIn !== null || usage.tokensOut !== null) {
    header.title = t.__('tokens sent → tokens received');
  }
  return header;
}

let tokenCounter = 0;

/**
 * A message notebook's `text/markdown` renderer: agent outputs get their own look, any
 * other Markdown renders as JupyterLab renders it, untrusted and with remote media held.
 */
export class AgentMarkdown extends RenderedMarkdown {
  /** Whether the user opened the thought of a step: kept while the step streams. */
  private _thoughtOpen = false;
  /** The newest model not rendered yet: a streaming reply's updates wait here, coalesced. */
  private _latest: IRenderMime.IMimeModel | null = null;
  /** The renders under way, one after the other, until no newer model waits. */
  private _drain: Promise<void> | null = null;
  /** Ends the pause between two renders at once: the final reply has come. */
  private _wake: (() => void) | null = null;

  constructor(options: IRenderMime.IRendererOptions) {
    super({ ...options, sanitizer: modelSanitizer(options.sanitizer) });
    armRemoteMedia(this.node);
  }

  /**
   * Renders the newest model only: the kernel resends a streaming reply whole with each
   * update, and rendering a long reply's Markdown for every one of them fell ever further
   * behind (a 300 KB reply of headings, lists and code: 30-40 s for a 6 s stream). While a
   * render is under way, a newer model waits and replaces any older one waiting; after a
   * streaming reply's render the page gets as long again before the next, so the renders
   * take at most half of its time. The last model (the final reply) is always rendered.
   */
  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._latest = model;
    if (this._wake !== null && !isStreamingReply(model)) {
      this._wake();
    }
    if (this._drain === null) {
      this._drain = this._renderLatest();
    }
    return this._drain;
  }

  private async _renderLatest(): Promise<void> {
    try {
      while (this._latest !== null) {
        const model = this._latest;
        this._latest = null;
        const started = performance.now();
        await super.renderModel(model);
        const next: IRenderMime.IMimeModel | null = this._latest;
        if (next !== null && isStreamingReply(next)) {
          const took = performance.now() - started;
          await new Promise<void>(resolve => {
            const timer = setTimeout(wake, took);
            function wake(): void {
              clearTimeout(timer);
              resolve();
            }
            this._wake = wake;
          });
          this._wake = null;
        }
      }
    } finally {
      this._drain = null;
    }
  }

  async render(model: IRenderMime.IMimeModel): Promise<void> {
    const agent = outputKind(model.metadata);
    markAgent(this, agent);
    if (agent === null) {
      await super.render(untrusted(model));
      return loadHeldMedia(this.node, this.resolver);
    }
    if (isTool(agent)) {
      return renderTool(this, model, agent);
    }
    const opened = this.node.querySelector('details.jp-PercentAgent-thought');
    if (opened) {
      this._thoughtOpen = (opened as HTMLDetailsElement).open;
    }
    this.node.textContent = '';
    const source = String(model.data[this.mimeType] ?? '');
    return this._renderReply(source, agent.attrs);
  }

  private async _renderReply(
    source: string,
    attrs: ReadonlyPartialJSONObject
  ): Promise<void> {
    const header = replyHeader(attrs);
    if (header) {
      this.node.appendChild(header);
    }
    const body = el('div', 'jp-PercentAgent-replyBody');
    this.node.appendChild(body);
    const streaming = isStreaming(attrs);
    if (attrs['plan'] === true) {
      // an external agent's plan: a checklist
      body.appendChild(renderPlan(source));
      return;
    }
    if (attrs['thought'] === true) {
      // an external agent's thinking, folded as an ATTP step's thought is
      return this._renderStep(
        {
          prose: '',
          thought: source,
          answer: null,
          toolCall: null,
          complete: true
        },
        body
      );
    }
    if (attrs['reasoning'] && !attrs['attp_error'] && !looksLikeAttp(source)) {
      // an external agent's text before a tool call: prose, not an ATTP step (the
      // runtime records one that does not parse with its `attp_error`)
      await this._markdownWithMedia(source, body);
      return;
    }
    if (attrs['reasoning'] || (streaming && looksLikeAttp(source))) {
      const step = parseAttp(source, streaming);
      if (step === null) {
        // Not ATTP this reader can read: the text as it is, never as Markdown.
        body.classList.add('jp-PercentAgent-rawStep');
        await markdownInto(this, fenced(source, 'toml'), body);
      } else {
        await this._renderStep(step, body);
      }
      const error = text(attrs['attp_error']);
      if (error) {
        body.appendChild(
          el(
            'div',
            'jp-PercentAgent-stepError',
            trans().__('Not valid ATTP: %1', error)
          )
        );
      }
      return;
    }
    await this._markdownWithMedia(source, body);
  }

  /** Markdown with the Jarvis display tags shown as media. */
  private async _markdownWithMedia(
    source: string,
    host: HTMLElement
  ): Promise<void> {
    const token = `PERCENTAGENTMEDIA${++tokenCounter}X`;
    const { source: prepared, tags } = extractJarvisTags(source, token);
    await markdownInto(this, prepared, host);
    if (tags.length) {
      await replaceJarvisPlaceholders(host, token, tags, this.resolver);
    }
  }

  /**
   * An ATTP step or answer: the thought as a collapsible block, the tool call's target and
   * its code as Python, a refusal's message, an answer as Markdown.
   */
  private async _renderStep(
    step: IAttpReply,
    body: HTMLElement
  ): Promise<void> {
    body.classList.add('jp-PercentAgent-step');
    if (step.prose) {
      const prose = el('div', 'jp-PercentAgent-stepProse');
      await this._markdownWithMedia(step.prose, prose);
      body.appendChild(prose);
    }
    if (step.thought) {
      const thought = el('details', 'jp-PercentAgent-thought');
      thought.open = this._thoughtOpen;
      const firstLine = step.thought.trim().split('\n', 1)[0];
      const summary = el('summary', '');
      summary.appendChild(
        el('span', 'jp-PercentAgent-thoughtLabel', trans().__('Thought'))
      );
      summary.appendChild(
        el('span', 'jp-PercentAgent-thoughtPreview', firstLine)
      );
      thought.appendChild(summary);
      const content = el('div', 'jp-PercentAgent-thoughtBody');
      await markdownInto(this, step.thought, content);
      thought.appendChild(content);
      thought.addEventListener('toggle', () => {
        this._thoughtOpen = thought.open;
      });
      body.appendChild(thought);
    }
    const call = step.toolCall;
    if (call) {
      const box = el('div', 'jp-PercentAgent-stepCall');
      const failed = call.status.trim().toLowerCase() === 'fail';
      box.dataset['status'] = call.status;
      if (call.target) {
        box.appendChild(el('div', 'jp-PercentAgent-stepTarget', call.target));
      }
      if (call.code) {
        const code = el('div', 'jp-PercentAgent-stepCode');
        await markdownInto(this, fenced(call.code, 'python'), code);
        box.appendChild(code);
      }
      if (failed || call.message) {
        box.appendChild(
          el('div', 'jp-PercentAgent-stepRefusal', call.message || 'fail')
        );
      }
      body.appendChild(box);
    }
    if (step.answer !== null) {
      const answer = el('div', 'jp-PercentAgent-stepAnswer');
      await this._markdownWithMedia(step.answer, answer);
      body.appendChild(answer);
    }
  }
}

/**
 * A message notebook's `text/plain` renderer: tool calls and tool results (what the format core writes
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

/** HTML in a message notebook: untrusted, sanitized, remote media behind a click. */
export class ModelHTML extends RenderedHTML {
  constructor(options: IRenderMime.IRendererOptions) {
    super({ ...options, sanitizer: modelSanitizer(options.sanitizer) });
    armRemoteMedia(this.node);
  }

  async render(model: IRenderMime.IMimeModel): Promise<void> {
    await super.render(untrusted(model));
    await loadHeldMedia(this.node, this.resolver);
  }
}

/**
 * The factories a message notebook's own renderer registry gets: everything its Markdown
 * and HTML outputs say is model output (or a shared file's), so all of it is untrusted.
 */
export const messageNotebookFactories: IRenderMime.IRendererFactory[] = [
  {
    safe: true,
    mimeTypes: [MARKDOWN_MIME],
    defaultRank: 60,
    createRenderer: options => new AgentMarkdown(options)
  },
  {
    // streams (`application/vnd.jupyter.stdout`, `...stderr`) keep JupyterLab's own
    safe: true,
    mimeTypes: [TEXT_MIME],
    defaultRank: 120,
    createRenderer: options => new AgentText(options)
  },
  {
    safe: true,
    mimeTypes: [HTML_MIME],
    defaultRank: 50,
    createRenderer: options => new ModelHTML(options)
  }
];
