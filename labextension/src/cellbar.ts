/**
 * The bar over every message cell: which agent answers it and how it enters the history,
 * seen at a glance and changed with one click; its stored summary, when it has one.
 *
 * It edits the cell's flat metadata keys `agent` and `history` (docs/format.md), the ones
 * its footnote holds, so saving writes them into the file. An excluded cell is dimmed.
 */

import { Cell, ICellModel } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';
import { PanelLayout, Widget } from '@lumino/widgets';

import {
  fileAgents,
  historyMode,
  HistoryMode,
  ICellView,
  IFileAgents
} from './agents';
import { trans } from './translation';

const BAR_CLASS = 'jp-PercentAgent-cellBar';
const EXCLUDED_CLASS = 'jp-PercentAgent-excluded';
const MODES: HistoryMode[] = ['include', 'auto', 'exclude', 'summary'];
function modeTitle(mode: HistoryMode): string {
  const t = trans();
  switch (mode) {
    case 'include':
      return t.__(
        'Sent to the agent with later messages (pinned, when the file says history: auto)'
      );
    case 'auto':
      return t.__(
        'Sent with a later message only when relevant to it (history: auto)'
      );
    case 'exclude':
      return t.__(
        'Never sent to the agent: the model does not see this message or its replies'
      );
    case 'summary':
      return t.__(
        'Sent as a short summary, made by the agent the first time it is needed'
      );
  }
}

/** Cell types (`percent_agent.type`) that are part of the conversation's history. */
const IN_HISTORY = new Set(['', 'code', 'tool_call', 'toolchain', 'async']);
/** Cell types that ask an agent. */
const ASKS_AGENT = new Set(['', 'async']);

function cellType(model: ICellModel): string | null {
  if (model.type !== 'code') {
    return null;
  }
  if (model.getMetadata('definition') === 'agent') {
    return 'agent';
  }
  const ns = model.getMetadata('percent_agent') as
    { type?: unknown } | undefined;
  return typeof ns?.type === 'string' ? ns.type : '';
}

/** The bar's select and buttons. */
const CONTROL_CLASS = 'jp-PercentAgent-barControl';
/** Lumino runs no shortcut for a keydown whose target (or an ancestor) has it. */
const SUPPRESS_SHORTCUTS = 'data-lm-suppress-shortcuts';

/**
 * Keys pressed on a control of a bar are the control's: never the notebook's single-key
 * shortcuts (`D D` on a focused button deleted cells in command mode, `Enter` opened the
 * editor), while chords (Ctrl+S, ...) still reach JupyterLab. Lumino reads the attribute
 * on the keydown's target itself (a notebook shortcut matches the focused control before
 * any ancestor is looked at), in its listener on the document's capture phase; this sets
 * it, per key, in a listener on the window's, which runs first.
 */
function markBarKey(event: KeyboardEvent): void {
  const target = event.target;
  if (
    !(target instanceof HTMLElement) ||
    !target.classList.contains(CONTROL_CLASS)
  ) {
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) {
    target.removeAttribute(SUPPRESS_SHORTCUTS);
  } else {
    target.setAttribute(SUPPRESS_SHORTCUTS, 'true');
  }
}

let barKeysWatched = false;

function watchBarKeys(): void {
  if (!barKeysWatched) {
    barKeysWatched = true;
    window.addEventListener('keydown', markBarKey, true);
  }
}

const agentsCache = new WeakMap<NotebookPanel, IFileAgents>();
/** Numbers the summaries, for their buttons' `aria-controls`. */
let summaryCount = 0;

/** The agents `panel`'s file defines; read again after any change to the notebook. */
function agentsOf(panel: NotebookPanel): IFileAgents {
  const cached = agentsCache.get(panel);
  if (cached) {
    return cached;
  }
  const model = panel.model;
  const views: ICellView[] =
    model === null
      ? []
      : Array.from(model.cells, cell => ({
          type: cell.type,
          source: cell.sharedModel.getSource(),
          metadata: cell.metadata as { [key: string]: unknown }
        }));
  const agents = fileAgents(views);
  agentsCache.set(panel, agents);
  return agents;
}

/** The bar of one cell. */
export class CellBar extends Widget {
  private readonly _cell: Cell;
  private readonly _panel: NotebookPanel;
  private readonly _select: HTMLSelectElement | null = null;
  private readonly _modes = new Map<HistoryMode, HTMLButtonElement>();
  private readonly _summaryButton: HTMLButtonElement;
  private readonly _summary: HTMLDivElement;
  private readonly _sent: HTMLSpanElement;

  constructor(panel: NotebookPanel, cell: Cell, type: string) {
    super();
    this._panel = panel;
    this._cell = cell;
    this.addClass(BAR_CLASS);
    watchBarKeys();
    this.node.setAttribute('role', 'toolbar');
    const t = trans();
    this.node.setAttribute('aria-label', t.__('Message: agent and history'));
    const row = document.createElement('div');
    row.className = 'jp-PercentAgent-cellBarRow';
    this.node.appendChild(row);

    if (ASKS_AGENT.has(type)) {
      const label = document.createElement('label');
      label.className = 'jp-PercentAgent-agentPick';
      label.appendChild(document.createTextNode(t.__('agent') + ' '));
      const select = document.createElement('select');
      select.className = `jp-PercentAgent-agentSelect ${CONTROL_CLASS}`;
      select.title = t.__('The agent that answers this message');
      select.setAttribute('aria-label', t.__('Agent'));
      // The file's agents may have changed since: list them afresh when the menu opens.
      select.addEventListener('mousedown', () => this._fillAgents());
      select.addEventListener('focus', () => this._fillAgents());
      select.addEventListener('change', () => this._setAgent(select.value));
      label.appendChild(select);
      row.appendChild(label);
      this._select = select;
    }

    const modes = document.createElement('span');
    modes.className = 'jp-PercentAgent-history';
    modes.setAttribute('role', 'group');
    modes.setAttribute('aria-label', t.__('History'));
    modes.appendChild(document.createTextNode(t.__('history') + ' '));
    for (const mode of MODES) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = `jp-PercentAgent-historyMode ${CONTROL_CLASS}`;
      button.dataset['mode'] = mode;
      button.textContent = mode;
      button.title = modeTitle(mode);
      button.addEventListener('click', () => this._setHistory(mode));
      modes.appendChild(button);
      this._modes.set(mode, button);
    }
    row.appendChild(modes);

    this._sent = document.createElement('span');
    this._sent.className = 'jp-PercentAgent-autoSent';
    this._sent.hidden = true;
    row.appendChild(this._sent);

    this._summaryButton = document.createElement('button');
    this._summaryButton.type = 'button';
    this._summaryButton.className = `jp-PercentAgent-summaryToggle ${CONTROL_CLASS}`;
    this._summaryButton.textContent = t.__('summary ▸');
    this._summaryButton.title = t.__(
      'Show the summary stored for this message'
    );
    this._summaryButton.setAttribute('aria-expanded', 'false');
    this._summaryButton.addEventListener('click', () => this._toggleSummary());
    row.appendChild(this._summaryButton);

    this._summary = document.createElement('div');
    this._summary.className = 'jp-PercentAgent-summary';
    this._summary.id = `jp-PercentAgent-summary-${++summaryCount}`;
    this._summary.setAttribute('role', 'region');
    this._summary.setAttribute('aria-label', t.__('Stored summary'));
    this._summary.hidden = true;
    this._summaryButton.setAttribute('aria-controls', this._summary.id);
    this.node.appendChild(this._summary);

    cell.model.metadataChanged.connect(this._update, this);
    this._update();
  }

  dispose(): void {
    if (!this.isDisposed) {
      this._cell.model?.metadataChanged.disconnect(this._update, this);
    }
    super.dispose();
  }

  private get _model(): ICellModel {
    return this._cell.model;
  }

  /** List the file's agents again, and its default history mode (its front matter or an
   * agent cell changed). */
  refreshAgents(): void {
    if (!this.isDisposed && this._model !== null) {
      this._update();
    }
  }

  private _fillAgents(): void {
    const select = this._select;
    if (select === null) {
      return;
    }
    const { names, defaultAgent } = agentsOf(this._panel);
    const current = this._model.getMetadata('agent');
    const chosen = typeof current === 'string' ? current : '';
    const t = trans();
    const options: [string, string][] = [
      ['', defaultAgent ? t.__('default (%1)', defaultAgent) : t.__('default')]
    ];
    for (const name of names) {
      options.push([name, name]);
    }
    if (chosen && !names.includes(chosen)) {
      options.push([chosen, t.__('%1 (not defined in this file)', chosen)]);
    }
    const same =
      select.options.length === options.length &&
      options.every(([value, label], i) => {
        const option = select.options[i];
        return option.value === value && option.textContent === label;
      });
    if (!same) {
      select.textContent = '';
      for (const [value, label] of options) {
        const option = document.createElement('option');
        option.value = value;
        option.textContent = label;
        select.appendChild(option);
      }
    }
    select.value = chosen;
  }

  private _setAgent(name: string): void {
    if (name) {
      this._model.setMetadata('agent', name);
    } else {
      this._model.deleteMetadata('agent');
    }
  }

  /** Say whether the last run's request held this auto cell (`ids`: the reply's
   * `history_auto`; null: no run chose). */
  showSent(ids: Set<string> | null): void {
    const auto =
      historyMode(
        this._model.getMetadata('history'),
        agentsOf(this._panel).history
      ) === 'auto';
    const ns = this._model.getMetadata('percent_agent') as
      { id?: unknown } | undefined;
    const id = typeof ns?.id === 'string' ? ns.id : this._model.id;
    this._sent.hidden = ids === null || !auto;
    const sent = ids !== null && ids.has(id);
    const t = trans();
    this._sent.textContent = sent ? t.__('sent') : t.__('not sent');
    this._sent.title = sent
      ? t.__('The last request held this cell: it was relevant to that message')
      : t.__(
          'The last request left this cell out: pin it (include) to send it always'
        );
    this.node.dataset['sent'] = ids === null || !auto ? '' : String(sent);
  }

  private _setHistory(mode: HistoryMode): void {
    if (mode === (agentsOf(this._panel).history ?? 'include')) {
      // The file's default for a message: no attribute at all, as a fresh cell has.
      this._model.deleteMetadata('history');
    } else {
      this._model.setMetadata('history', mode);
    }
  }

  private _toggleSummary(): void {
    this._showSummary(this._summary.hidden);
  }

  private _showSummary(shown: boolean): void {
    this._summary.hidden = !shown;
    this._summaryButton.textContent = shown
      ? trans().__('summary ▾')
      : trans().__('summary ▸');
    this._summaryButton.setAttribute('aria-expanded', String(shown));
  }

  private _update(): void {
    if (this.isDisposed || this._model === null) {
      return;
    }
    this._fillAgents();
    const mode = historyMode(
      this._model.getMetadata('history'),
      agentsOf(this._panel).history
    );
    for (const [m, button] of this._modes) {
      button.setAttribute('aria-pressed', String(m === mode));
      button.classList.toggle('jp-mod-active', m === mode);
    }
    this._cell.toggleClass(EXCLUDED_CLASS, mode === 'exclude');
    this.node.dataset['history'] = mode;
    const summary = this._model.getMetadata('summary');
    const has = typeof summary === 'string' && summary.trim() !== '';
    this._summaryButton.hidden = !has;
    // A summary is model-written text: shown as text, never as HTML.
    this._summary.textContent = has ? (summary as string) : '';
    if (!has) {
      this._showSummary(false);
    }
  }
}

const decorated = new WeakMap<Cell, CellBar>();

/** The `history_auto` ids of the newest reply that has them (null: no run chose). */
function lastAutoSent(panel: NotebookPanel): Set<string> | null {
  const cells = panel.model?.cells;
  if (!cells) {
    return null;
  }
  for (let i = cells.length - 1; i >= 0; i--) {
    const cell = cells.get(i) as ICellModel & {
      outputs?: {
        length: number;
        get(i: number): { metadata: { [k: string]: unknown } };
      };
    };
    const outputs = cell.outputs;
    for (let j = (outputs?.length ?? 0) - 1; outputs && j >= 0; j--) {
      const ids = outputs.get(j).metadata?.['history_auto'];
      if (Array.isArray(ids)) {
        return new Set(ids.map(String));
      }
    }
  }
  return null;
}

/** Give every message cell of `panel` its bar (cells added later too); disposing the result
 * takes the bars away and stops watching. */
export function decorateCells(panel: NotebookPanel): IDisposable {
  const bars = new Set<CellBar>();
  const run = (): void => {
    if (panel.isDisposed) {
      return;
    }
    for (const cell of panel.content.widgets) {
      if (decorated.has(cell) || cell.isDisposed) {
        continue;
      }
      const type = cellType(cell.model);
      if (type === null || !IN_HISTORY.has(type)) {
        continue;
      }
      const bar = new CellBar(panel, cell, type);
      decorated.set(cell, bar);
      bars.add(bar);
      cell.disposed.connect(() => bar.dispose());
      bar.disposed.connect(() => bars.delete(bar));
      // Above the input, below the cell's (empty) header: once the cell has made its parts
      // (a cell the notebook has not rendered yet, windowed out of view, has none).
      void cell.ready.then(() => {
        if (cell.isDisposed || bar.isDisposed) {
          return;
        }
        const layout = cell.layout as PanelLayout;
        const input = cell.inputArea?.parent ?? null;
        const at = input === null ? -1 : layout.widgets.indexOf(input);
        layout.insertWidget(at < 0 ? 1 : at, bar);
      });
    }
    showSent();
  };
  const showSent = (): void => {
    const ids = lastAutoSent(panel);
    for (const cell of panel.content.widgets) {
      decorated.get(cell)?.showSent(ids);
    }
  };
  // An edit of the front matter (or of an agent cell) changes what every bar shows at a
  // glance, "default (NAME)" above all: once the typing pauses, the bars list them again.
  let timer = 0;
  let shown = '';
  const contentChanged = (): void => {
    agentsCache.delete(panel);
    window.clearTimeout(timer);
    timer = window.setTimeout(() => {
      if (panel.isDisposed) {
        return;
      }
      showSent(); // a run's reply arrived, or a cell was pinned or excluded
      const agents = JSON.stringify(agentsOf(panel));
      if (agents === shown) {
        return;
      }
      shown = agents;
      for (const cell of panel.content.widgets) {
        decorated.get(cell)?.refreshAgents();
      }
    }, 250);
  };
  // JupyterLab makes the widgets of new cells in its own handler of the same signal.
  const cellsChanged = (): void => void Promise.resolve().then(run);
  const model = panel.model;
  model?.contentChanged.connect(contentChanged);
  model?.cells.changed.connect(cellsChanged);
  run();
  void panel.context.ready.then(run);
  return new DisposableDelegate(() => {
    window.clearTimeout(timer);
    model?.contentChanged.disconnect(contentChanged);
    model?.cells.changed.disconnect(cellsChanged);
    for (const bar of Array.from(bars)) {
      bar.dispose();
    }
  });
}
